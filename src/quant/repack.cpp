// GGUF block types -> packed cells. Direct types copy codes and scales cell by cell; the
// rest decode 16 rows exactly and requantise them to W6 (5/6-bit and Q3_K sources) or W8.
#include "quant/repack.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/half.h"
#include "core/parallel_ranges.h"
#include "quant/cell.h"
#include "quant/gguf_blocks.h"
#include "quant/mxfp4.h"
#include "quant/quantize.h"

namespace edge {

namespace {

uint16_t ld_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// One Q4_0 / Q4_1 / Q8_0 block (32 weights) into row r of a g32 cell.
// 16 bytes of a Q4_0 / Q4_1 block (element j: low nibble of byte j, element j + 16: its
// high nibble) into row r of a g32 cell's nibbles.
void put_nibbles32(const uint8_t* qs, uint8_t* cell, int r) {
  uint8_t code[32];
  for (int j = 0; j < 16; ++j) code[j] = qs[j] & 15, code[j + 16] = qs[j] >> 4;
  cell::put_w4_row(cell, r, code, 32);
}

void put_q4_0(const uint8_t* b, const PackedFormat& f, uint8_t* cell, int r) {
  cell::set_u16(cell + cell::scales_offset(f), r, ld_u16(b));
  put_nibbles32(b + 2, cell, r);
}

void put_q4_1(const uint8_t* b, const PackedFormat& f, uint8_t* cell, int r) {
  cell::set_u16(cell + cell::scales_offset(f), r, ld_u16(b));
  cell::set_u16(cell + cell::mins_offset(f), r, ld_u16(b + 2));
  put_nibbles32(b + 4, cell, r);
}

void put_q8_0(const uint8_t* b, const PackedFormat& f, uint8_t* cell, int r) {
  cell::set_u16(cell + cell::scales_offset(f), r, ld_u16(b));
  int sum = 0;
  for (int j = 0; j < 32; ++j) {
    const int q = std::max<int>(-127, static_cast<int8_t>(b[2 + j]));
    cell::set_w8_code(cell, r, j, q);
    sum += q;
  }
  cell::set_u16(cell + cell::sums_offset(f), r, static_cast<uint16_t>(static_cast<int16_t>(sum)));
}

// One Q4_K super-block (256 weights = 8 sub-blocks of 32) into row r of 8 consecutive cells.
Status put_q4_k(const uint8_t* b, const PackedFormat& f, uint8_t* cells, int r) {
  const float d = f16_to_f32(ld_u16(b)), dmin = f16_to_f32(ld_u16(b + 2));
  const uint8_t* s12 = b + 4;
  const uint8_t* qs = b + 16;
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, mn;
    q4k_scale_min(j, s12, &sc, &mn);
    uint8_t* cell = cells + j * f.group_bytes();
    const uint16_t hs = f32_to_f16(d * static_cast<float>(sc));
    const uint16_t hm = f32_to_f16(-(dmin * static_cast<float>(mn)));
    if (!std::isfinite(f16_to_f32(hs)) || !std::isfinite(f16_to_f32(hm)))
      return Status::invalid_format("Q4_K sub-block scale or min overflows fp16");
    cell::set_u16(cell + cell::scales_offset(f), r, hs);
    cell::set_u16(cell + cell::mins_offset(f), r, hm);
    const uint8_t* q = qs + 32 * (j / 2);
    uint8_t code[32];
    for (int l = 0; l < 32; ++l) code[l] = (j % 2) ? (q[l] >> 4) : (q[l] & 15);
    cell::put_w4_row(cell, r, code, 32);
  }
  return {};
}

// The per-row fields of a Q4_K or Q5_K super-block (fp16 d, dmin | 12 bytes of 6-bit sc and
// m), which q4k_g256 and q5k_g256 cells share, into row r of the cell.
void put_k45_fields(const uint8_t* b, uint8_t* cell, int r) {
  cell::set_u16(cell + cell::kQ4KDOffset, r, ld_u16(b));
  cell::set_u16(cell + cell::kQ4KDminOffset, r, ld_u16(b + 2));
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, mn;
    q4k_scale_min(j, b + 4, &sc, &mn);
    cell[cell::q4k_sc_byte(j, r)] = sc;
    cell[cell::q4k_m_byte(j, r)] = mn;
  }
}

// One Q4_K super-block into row r of a q4k_g256 cell: every field as stored (exact).
void put_q4_k_cell(const uint8_t* b, uint8_t* cell, int r) {
  put_k45_fields(b, cell, r);
  uint8_t code[256];
  for (int j = 0; j < 8; ++j) {
    const uint8_t* q = b + 16 + 32 * (j / 2);
    for (int l = 0; l < 32; ++l) code[32 * j + l] = (j % 2) ? (q[l] >> 4) : (q[l] & 15);
  }
  cell::put_w4_row(cell + cell::kQ4KCodes, r, code, 256);
}

// One Q6_K super-block (ql[128] | qh[64] | s8 scales[16] | fp16 d; element order as
// dec_q6_k) into row r of a q6k_g256 cell: every field as stored (exact).
void put_q6_k_cell(const uint8_t* b, uint8_t* cell, int r) {
  cell::set_u16(cell + cell::kQ6KDOffset, r, ld_u16(b + 208));
  for (int j = 0; j < 16; ++j) cell[cell::q6k_sc_byte(j, r)] = b[192 + j];
  uint8_t code[256];
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = b + 64 * half;
    const uint8_t* qh = b + 128 + 32 * half;
    for (int s = 0; s < 4; ++s)
      for (int l = 0; l < 32; ++l) {
        const uint8_t lo = ql[l + 32 * (s & 1)];
        code[128 * half + 32 * s + l] = static_cast<uint8_t>((s >= 2 ? (lo >> 4) : (lo & 15)) |
                                                             (((qh[l] >> (2 * s)) & 3) << 4));
      }
  }
  for (int m = 0; m < 16; ++m) {
    uint8_t* chunk = cell::q6k_chunk(cell, 16 * m);
    cell::put_w6_row(chunk, chunk + 128, r, code + 16 * m, 16);
  }
}

// One Q5_K super-block (fp16 d, dmin | 12 bytes of 6-bit sc / m | qh[32] | qs[128]; element
// 32 j + l: nibble j % 2 of qs[32 (j / 2) + l], bit 4 = bit j of qh[l]) into row r of a
// q5k_g256 cell: every field as stored (exact).
void put_q5_k_cell(const uint8_t* b, uint8_t* cell, int r) {
  put_k45_fields(b, cell, r);
  const uint8_t* qh = b + 16;
  for (int j = 0; j < 8; ++j) {
    const uint8_t* q = b + 48 + 32 * (j / 2);
    uint8_t code[32];
    for (int l = 0; l < 32; ++l)
      code[l] =
          static_cast<uint8_t>(((j % 2) ? (q[l] >> 4) : (q[l] & 15)) | ((qh[l] >> j) & 1) << 4);
    cell::put_q5k_row(cell::q5k_chunk(cell, 32 * j), r, code);
  }
}

// One MXFP4 block (u8 e | qs[16], element j: low nibble of qs[j], j + 16: its high nibble)
// into row r of an mxfp4_g32 cell: the E2M1 codes and e as stored (exact).
void put_mxfp4(const uint8_t* b, uint8_t* cell, int r) {
  cell[cell::kMxfp4ExpOffset + r] = b[0];
  put_nibbles32(b + 1, cell, r);
}

}  // namespace

Expected<PackedFormat> repack_format(DType src, KQuantCells cells) {
  switch (src) {
    case DType::Q4_0: return PackedFormat{PackedKind::kW4Sym, 32};
    case DType::Q4_K:
      if (cells.q4k) return PackedFormat{PackedKind::kQ4K, 256};
      return PackedFormat{PackedKind::kW4Asym, 32};
    case DType::Q4_1:
      return PackedFormat{PackedKind::kW4Asym, 32};
    // W6 rather than W8: the 5/6-bit sources keep (about) their own bytes, 6.5 bits per
    // weight instead of 9. No exact repack: Q6_K has an int8 scale per 16 weights and Q5_K
    // / Q5_1 a min per block, our W6 one fp16 scale per 32, so these are requantised.
    case DType::Q6_K:
      if (cells.q6k) return PackedFormat{PackedKind::kQ6K, 256};
      return PackedFormat{PackedKind::kW6, 32};
    case DType::Q5_K:
      if (cells.q5k) return PackedFormat{PackedKind::kQ5K, 256};
      return PackedFormat{PackedKind::kW6, 32};
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q3_K: return PackedFormat{PackedKind::kW6, 32};
    case DType::Q8_0:
    case DType::Q2_K: return PackedFormat{PackedKind::kW8, 32};
    case DType::MXFP4:
      return PackedFormat{PackedKind::kMxfp4, 32};
    default:
      return Status::unsupported(std::string("no repack from GGUF type ") + dtype_name(src));
  }
}

bool is_repackable(DType src) { return repack_format(src).ok(); }

Status repack_panel(const TensorView& src, const PackedFormat& f, int64_t panel, uint8_t* dst,
                    float* scratch) {
  const int64_t n = src.rows(), k = src.cols();
  const int64_t valid = std::min(kPanelRows, n - panel * kPanelRows);
  const uint64_t rb = *dtype_row_bytes(src.dtype, k);
  const int64_t cb = f.group_bytes();
  const uint8_t* rows = src.data + static_cast<uint64_t>(panel * kPanelRows) * rb;
  const bool direct = src.dtype == DType::Q4_0 || src.dtype == DType::Q4_1 ||
                      src.dtype == DType::Q8_0 || src.dtype == DType::Q4_K ||
                      src.dtype == DType::MXFP4 || f.kind == PackedKind::kQ6K ||
                      f.kind == PackedKind::kQ5K;
  if (!direct) {
    for (int64_t r = 0; r < valid; ++r)
      RETURN_IF_ERROR(dequantize_gguf_row(src.dtype, rows + r * rb, k, scratch + r * k));
    return quantize_panel(f, k, scratch, valid, dst);
  }
  // Every byte of a valid row is written below; only a last panel's padding rows need
  // zeros (the fresh buffer is zero already, but it may be reused: do not rely on that).
  // Zeroing whole panels measured 17% of the 1.54B Q4_K_M model's load.
  if (valid < kPanelRows) std::memset(dst, 0, static_cast<size_t>((k / f.group) * cb));
  for (int64_t r = 0; r < valid; ++r) {
    const uint8_t* row = rows + r * rb;
    const int ri = static_cast<int>(r);
    switch (src.dtype) {
      case DType::Q4_0:
        for (int64_t b = 0; b < k / 32; ++b) put_q4_0(row + b * 18, f, dst + b * cb, ri);
        break;
      case DType::Q4_1:
        for (int64_t b = 0; b < k / 32; ++b) put_q4_1(row + b * 20, f, dst + b * cb, ri);
        break;
      case DType::Q8_0:
        for (int64_t b = 0; b < k / 32; ++b) put_q8_0(row + b * 34, f, dst + b * cb, ri);
        break;
      case DType::Q6_K:  // into q6k_g256 (`direct` only then)
        for (int64_t b = 0; b < k / 256; ++b) put_q6_k_cell(row + b * 210, dst + b * cb, ri);
        break;
      case DType::MXFP4:
        for (int64_t b = 0; b < k / 32; ++b) put_mxfp4(row + b * 17, dst + b * cb, ri);
        break;
      case DType::Q5_K:  // into q5k_g256 (`direct` only then)
        for (int64_t b = 0; b < k / 256; ++b) put_q5_k_cell(row + b * 176, dst + b * cb, ri);
        break;
      default:  // Q4_K
        if (f.kind == PackedKind::kQ4K) {
          for (int64_t b = 0; b < k / 256; ++b) put_q4_k_cell(row + b * 144, dst + b * cb, ri);
          break;
        }
        for (int64_t b = 0; b < k / 256; ++b)
          RETURN_IF_ERROR(put_q4_k(row + b * 144, f, dst + 8 * b * cb, ri)
                              .with_context("row " + std::to_string(panel * kPanelRows + r)));
        break;
    }
  }
  return {};
}

TensorView expert_matrix(const TensorView& t, int64_t e) {
  if (t.shape.size() != 3) return t;
  const int64_t n = t.shape[1], k = t.shape[2];
  const uint64_t bytes = *dtype_row_bytes(t.dtype, k) * static_cast<uint64_t>(n);
  TensorView v = t;
  v.shape = {n, k};
  v.data = t.data + static_cast<uint64_t>(e) * bytes;
  v.nbytes = bytes;
  return v;
}

Status check_repackable_tensor(const TensorView& src, const PackedFormat& f) {
  if (src.shape.size() != 2 && src.shape.size() != 3)
    return Status::invalid_argument("tensor '" + src.name + "' " + src.shape_string() +
                                    " is neither a matrix [N, K] nor experts [E, N, K]");
  RETURN_IF_ERROR(check_tensor_bytes(src));
  for (int64_t d : src.shape)
    if (d <= 0)
      return Status::invalid_argument("tensor '" + src.name + "' " + src.shape_string() +
                                      " is empty");
  if (src.cols() % f.group != 0)
    return Status::invalid_argument("tensor '" + src.name + "' " + src.shape_string() +
                                    " cannot be repacked as " + f.name());
  return {};
}

Status repack_tensor_panel(const TensorView& src, const PackedFormat& f, int64_t i, uint8_t* dst,
                           float* scratch) {
  if (src.shape.size() != 3) return repack_panel(src, f, i, dst, scratch);
  const int64_t per_expert = PackedFormat::panels(src.shape[1]);
  return repack_panel(expert_matrix(src, i / per_expert), f, i % per_expert, dst, scratch);
}

int64_t tensor_panels(const TensorView& t) {
  const int64_t experts = t.shape.size() == 3 ? t.shape[0] : 1;
  return experts * PackedFormat::panels(t.shape[t.shape.size() - 2]);
}

Status repack_matrix(const TensorView& src, uint8_t* dst, uint64_t dst_bytes, int threads,
                     KQuantCells cells) {
  ASSIGN_OR_RETURN(PackedFormat f, repack_format(src.dtype, cells));
  RETURN_IF_ERROR(check_repackable_tensor(src, f));
  const int64_t want = packed_tensor_bytes(f, src.shape);
  if (dst_bytes != static_cast<uint64_t>(want))
    return Status::invalid_argument("tensor '" + src.name + "' as " + f.name() + " needs " +
                                    std::to_string(want) + " bytes, given " +
                                    std::to_string(dst_bytes));
  // Every panel (of every expert) is one unit: expert e's panel p is panel e * P + p, and
  // its bytes follow in the same order (packed.h), so the panel index alone places it.
  const int64_t k = src.cols();
  const int64_t panel_bytes = (k / f.group) * f.group_bytes();
  auto repack_range = [&](int64_t p0, int64_t p1, int) -> Status {
    std::vector<float> scratch(static_cast<size_t>(kPanelRows * k));
    for (int64_t p = p0; p < p1; ++p)
      RETURN_IF_ERROR(repack_tensor_panel(src, f, p, dst + p * panel_bytes, scratch.data()));
    return Status();
  };
  return parallel_ranges(threads, tensor_panels(src), repack_range)
      .with_context("tensor '" + src.name + "'");
}

namespace {

// The shape checks of repack_hf_mxfp4: blocks [E, R, G, 16] and scales [E, R, G], both U8
// (or I8: safetensors writers differ), R a multiple of step, row0 < step.
Status check_hf_mxfp4(const TensorView& blocks, const TensorView& scales, int64_t row0,
                      int64_t step) {
  auto bytes = [](const TensorView& t) { return t.dtype == DType::U8 || t.dtype == DType::I8; };
  if (blocks.shape.size() != 4 || blocks.shape[3] != 16 || !bytes(blocks))
    return Status::invalid_format("MXFP4 blocks '" + blocks.name + "' " + blocks.shape_string() +
                                  " " + dtype_name(blocks.dtype) +
                                  ": expected u8 [experts, rows, K / 32, 16]");
  if (scales.shape.size() != 3 || !bytes(scales) ||
      !std::equal(scales.shape.begin(), scales.shape.end(), blocks.shape.begin()))
    return Status::invalid_format("MXFP4 scales '" + scales.name + "' " + scales.shape_string() +
                                  " do not match blocks '" + blocks.name + "' " +
                                  blocks.shape_string());
  for (int64_t d : blocks.shape)
    if (d <= 0) return Status::invalid_format("MXFP4 blocks '" + blocks.name + "' are empty");
  if (step <= 0 || row0 < 0 || row0 >= step || blocks.shape[1] % step != 0)
    return Status::invalid_argument("MXFP4 blocks '" + blocks.name + "': " +
                                    std::to_string(blocks.shape[1]) + " rows cannot be taken every " +
                                    std::to_string(step) + " from " + std::to_string(row0));
  RETURN_IF_ERROR(check_tensor_bytes(blocks));
  return check_tensor_bytes(scales);
}

}  // namespace

Status repack_hf_mxfp4(const TensorView& blocks, const TensorView& scales, int64_t row0,
                       int64_t step, uint8_t* dst, uint64_t dst_bytes, int threads) {
  RETURN_IF_ERROR(check_hf_mxfp4(blocks, scales, row0, step));
  const int64_t experts = blocks.shape[0], rows = blocks.shape[1], groups = blocks.shape[2];
  const int64_t n = rows / step, k = groups * 32;
  const PackedFormat f{PackedKind::kMxfp4, 32};
  const int64_t want = packed_tensor_bytes(f, {experts, n, k});
  if (dst_bytes != static_cast<uint64_t>(want))
    return Status::invalid_argument("MXFP4 blocks '" + blocks.name + "' as " + f.name() +
                                    " need " + std::to_string(want) + " bytes, given " +
                                    std::to_string(dst_bytes));
  const int64_t cb = f.group_bytes(), panel_bytes = groups * cb, panels = PackedFormat::panels(n);
  auto repack_range = [&](int64_t p0, int64_t p1, int) -> Status {
    for (int64_t i = p0; i < p1; ++i) {
      const int64_t e = i / panels, p = i % panels;
      uint8_t* cells = dst + i * panel_bytes;
      const int64_t valid = std::min(kPanelRows, n - p * kPanelRows);
      if (valid < kPanelRows) std::memset(cells, 0, static_cast<size_t>(panel_bytes));
      for (int64_t r = 0; r < valid; ++r) {
        const int64_t src_row = e * rows + row0 + step * (p * kPanelRows + r);
        const uint8_t* hb = blocks.data + src_row * groups * 16;
        const uint8_t* hs = scales.data + src_row * groups;
        for (int64_t g = 0; g < groups; ++g) {
          // HF's element i sits in byte i / 2, nibble i % 2; GGUF's block wants element j
          // low and j + 16 high in byte j.
          auto code = [&](int i) { return (hb[g * 16 + i / 2] >> (4 * (i % 2))) & 15; };
          uint8_t block[kMxfp4BlockBytes];
          block[0] = hs[g];
          for (int j = 0; j < 16; ++j) block[1 + j] = static_cast<uint8_t>(code(j) | code(j + 16) << 4);
          put_mxfp4(block, cells + g * cb, static_cast<int>(r));
        }
      }
    }
    return Status();
  };
  return parallel_ranges(threads, experts * panels, repack_range)
      .with_context("MXFP4 blocks '" + blocks.name + "'");
}

}  // namespace edge
