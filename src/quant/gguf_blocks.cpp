// GGUF block decoders, written from the format's block definitions:
//   Q4_0 (18 B):  f16 d | u8 qs[16]             x[j] = (lo(qs[j]) - 8) d, x[j+16] = (hi - 8) d
//   Q4_1 (20 B):  f16 d | f16 m | qs[16]        x = q d + m
//   Q5_0 (22 B):  f16 d | u8 qh[4] | qs[16]     5th bit of x[j] is bit j of qh (u32 LE); x = (q-16) d
//   Q5_1 (24 B):  f16 d | f16 m | qh[4] | qs[16] x = q d + m
//   Q8_0 (34 B):  f16 d | i8 qs[32]             x = q d
//   Q2_K (84 B):  u8 scales[16] | qs[64] | f16 d | f16 dmin      16 sub-blocks of 16
//   Q3_K (110 B): u8 hmask[32] | qs[64] | scales[12] | f16 d      16 sub-blocks of 16
//   Q4_K (144 B): f16 d | f16 dmin | scales[12] | qs[128]         8 sub-blocks of 32
//   Q5_K (176 B): f16 d | f16 dmin | scales[12] | qh[32] | qs[128]
//   Q6_K (210 B): ql[128] | qh[64] | i8 scales[16] | f16 d         16 sub-blocks of 16
#include "quant/gguf_blocks.h"

#include <cstring>

#include "core/half.h"
#include "quant/mxfp4.h"

namespace edge {

namespace {

float ld_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0: one 32-element block.
void dec_q4_0(const uint8_t* b, float* y) {
  const float d = ld_f16(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((qs[j] & 15) - 8) * d;
    y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

void dec_q4_1(const uint8_t* b, float* y) {
  const float d = ld_f16(b), m = ld_f16(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(qs[j] & 15) * d + m;
    y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
  }
}

// 5-bit codes: low nibble from qs, high bit from the 32-bit mask qh.
void q5_codes(const uint8_t* qh4, const uint8_t* qs, int* q) {
  uint32_t qh;
  std::memcpy(&qh, qh4, 4);
  for (int j = 0; j < 16; ++j) {
    q[j] = (qs[j] & 15) | static_cast<int>(((qh >> j) & 1u) << 4);
    q[j + 16] = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
  }
}

void dec_q5_0(const uint8_t* b, float* y) {
  const float d = ld_f16(b);
  int q[32];
  q5_codes(b + 2, b + 6, q);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q[j] - 16) * d;
}

void dec_q5_1(const uint8_t* b, float* y) {
  const float d = ld_f16(b), m = ld_f16(b + 2);
  int q[32];
  q5_codes(b + 4, b + 8, q);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q[j]) * d + m;
}

void dec_q8_0(const uint8_t* b, float* y) {
  const float d = ld_f16(b);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

// Q2_K: scales[i] = 4-bit scale | 4-bit min << 4 for sub-block i (16 elements). Each
// 128-element half uses 32 bytes of qs; the 2-bit field at shift 2s of byte l holds
// element 32s + l of that half.
void dec_q2_k(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* qs = b + 16;
  const float d = ld_f16(b + 80), dmin = ld_f16(b + 82);
  int is = 0;
  for (int half = 0; half < 2; ++half, qs += 32) {
    for (int s = 0; s < 4; ++s) {
      for (int sub = 0; sub < 2; ++sub) {
        const uint8_t sc = scales[is++];
        const float dl = d * static_cast<float>(sc & 15), ml = dmin * static_cast<float>(sc >> 4);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * static_cast<float>((qs[16 * sub + l] >> (2 * s)) & 3) - ml;
      }
    }
  }
}

// Q3_K 6-bit signed scales (stored + 32): low 4 bits in scales[0..7] (low nibble for
// sub-blocks 0-7, high nibble for 8-15), high 2 bits in scales[8 + i % 4] at 2 * (i / 4).
int q3k_scale(const uint8_t* s12, int i) {
  const int lo = i < 8 ? (s12[i] & 15) : (s12[i - 8] >> 4);
  const int hi = (s12[8 + i % 4] >> (2 * (i / 4))) & 3;
  return (lo | (hi << 4)) - 32;
}

// Q3_K: 2 low bits like Q2_K; the high bit is bit 4 * half + s of hmask[l], and when it is
// clear the code is offset by -4 (codes -4..3).
void dec_q3_k(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* qs = b + 32;
  const uint8_t* s12 = b + 96;
  const float d = ld_f16(b + 108);
  int is = 0;
  uint8_t m = 1;
  for (int half = 0; half < 2; ++half, qs += 32) {
    for (int s = 0; s < 4; ++s, m = static_cast<uint8_t>(m << 1)) {
      for (int sub = 0; sub < 2; ++sub) {
        const float dl = d * static_cast<float>(q3k_scale(s12, is++));
        for (int l = 0; l < 16; ++l) {
          const int idx = 16 * sub + l;
          const int q = ((qs[idx] >> (2 * s)) & 3) - ((hmask[idx] & m) ? 0 : 4);
          *y++ = dl * static_cast<float>(q);
        }
      }
    }
  }
}

// Q4_K: 8 sub-blocks of 32; pairs (2c, 2c+1) share 32 bytes of qs: low nibbles then high.
void dec_q4_k(const uint8_t* b, float* y) {
  const float d = ld_f16(b), dmin = ld_f16(b + 2);
  const uint8_t* s12 = b + 4;
  const uint8_t* qs = b + 16;
  for (int c = 0; c < 4; ++c, qs += 32) {
    for (int h = 0; h < 2; ++h) {
      uint8_t sc, mn;
      q4k_scale_min(2 * c + h, s12, &sc, &mn);
      const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(mn);
      for (int l = 0; l < 32; ++l)
        *y++ = dl * static_cast<float>(h ? (qs[l] >> 4) : (qs[l] & 15)) - ml;
    }
  }
}

// Q5_K: as Q4_K plus a 5th bit: bit (2c + h) of qh[l] for element l of sub-block 2c+h.
void dec_q5_k(const uint8_t* b, float* y) {
  const float d = ld_f16(b), dmin = ld_f16(b + 2);
  const uint8_t* s12 = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48;
  for (int c = 0; c < 4; ++c, qs += 32) {
    for (int h = 0; h < 2; ++h) {
      uint8_t sc, mn;
      q4k_scale_min(2 * c + h, s12, &sc, &mn);
      const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(mn);
      const int bit = 2 * c + h;
      for (int l = 0; l < 32; ++l) {
        const int q = (h ? (qs[l] >> 4) : (qs[l] & 15)) + (((qh[l] >> bit) & 1) << 4);
        *y++ = dl * static_cast<float>(q) - ml;
      }
    }
  }
}

// Q6_K: each 128-element half uses 64 bytes of ql and 32 of qh. Element 32*s + l (s = 0..3)
// takes nibble (s >= 2 ? high : low) of ql[l + 32 * (s & 1)] and bits 2s..2s+1 of qh[l];
// its scale is scales[8 * half + 2 * s + l / 16]; q - 32 is signed.
void dec_q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = ld_f16(b + 208);
  for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, y += 128) {
    for (int s = 0; s < 4; ++s) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t lo = ql[l + 32 * (s & 1)];
        const int nib = s >= 2 ? (lo >> 4) : (lo & 15);
        const int q = (nib | (((qh[l] >> (2 * s)) & 3) << 4)) - 32;
        y[32 * s + l] = d * static_cast<float>(sc[2 * s + l / 16]) * static_cast<float>(q);
      }
    }
  }
}

using BlockDecoder = void (*)(const uint8_t*, float*);

BlockDecoder decoder_of(DType t) {
  switch (t) {
    case DType::Q4_0: return dec_q4_0;
    case DType::Q4_1: return dec_q4_1;
    case DType::Q5_0: return dec_q5_0;
    case DType::Q5_1: return dec_q5_1;
    case DType::Q8_0: return dec_q8_0;
    case DType::Q2_K: return dec_q2_k;
    case DType::Q3_K: return dec_q3_k;
    case DType::Q4_K: return dec_q4_k;
    case DType::Q5_K: return dec_q5_k;
    case DType::Q6_K: return dec_q6_k;
    case DType::MXFP4:  // u8 e | qs[16]: quant/mxfp4.h
      return dequantize_mxfp4_block;
    default: return nullptr;
  }
}

}  // namespace

void q4k_scale_min(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  // Sub-blocks 0-3: 6 bits in bytes 0-3 (scale) and 4-7 (min). Sub-blocks 4-7: low 4
  // bits in byte 8+j-4 (scale low nibble, min high nibble), top 2 bits in the top bits of
  // bytes j-4 (scale) and j (min).
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 15) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

bool gguf_type_decodable(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || decoder_of(t) != nullptr;
}

Status dequantize_gguf_row(DType t, const uint8_t* src, int64_t n, float* out) {
  switch (t) {
    case DType::F32:
      std::memcpy(out, src, static_cast<size_t>(n) * 4);
      return {};
    case DType::F16:
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        out[i] = t == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      return {};
    default: break;
  }
  const BlockDecoder dec = decoder_of(t);
  int64_t be = 0, bb = 0;
  if (!dec || !dtype_block_info(t, &be, &bb))
    return Status::unsupported(std::string("cannot dequantise GGUF type ") + dtype_name(t));
  if (n % be != 0)
    return Status::invalid_argument(std::string(dtype_name(t)) + " row of " + std::to_string(n) +
                                    " elements is not a multiple of the block size " +
                                    std::to_string(be));
  for (int64_t b = 0; b < n / be; ++b) dec(src + b * bb, out + b * be);
  return {};
}

Status check_tensor_bytes(const TensorView& t) {
  auto row = dtype_row_bytes(t.dtype, t.cols());
  if (!row) return row.status().with_context("tensor '" + t.name + "'");
  const uint64_t want = *row * static_cast<uint64_t>(t.rows());
  if (t.nbytes != want || (want > 0 && t.data == nullptr))
    return Status::invalid_format("tensor '" + t.name + "' " + dtype_name(t.dtype) + " " +
                                  t.shape_string() + " needs " + std::to_string(want) +
                                  " bytes but has " + std::to_string(t.nbytes));
  return {};
}

Status dequantize_tensor_row(const TensorView& t, int64_t row, float* out) {
  RETURN_IF_ERROR(check_tensor_bytes(t));
  if (row < 0 || row >= t.rows())
    return Status::out_of_range("row " + std::to_string(row) + " of tensor '" + t.name + "' " +
                                t.shape_string());
  const uint64_t rb = *dtype_row_bytes(t.dtype, t.cols());
  return dequantize_gguf_row(t.dtype, t.data + static_cast<uint64_t>(row) * rb, t.cols(), out);
}

}  // namespace edge
