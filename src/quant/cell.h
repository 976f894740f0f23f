// Scalar access to one (panel, group) cell of the packed layout (packed.h): the single
// place that spells out the byte positions, used by the quantiser, the repacker, the
// reference dequantiser and the tests. Not for hot loops (the SIMD kernels read blocks).
#pragma once

#include <cstdint>
#include <cstring>

#include "core/half.h"
#include "quant/packed.h"

namespace edge::cell {

// W4: block kk/8 of 64 bytes; byte 4*row + kk%4; low nibble for kk%8 < 4, else high.
inline int64_t w4_byte(int row, int kk) { return (kk / 8) * 64 + 4 * row + (kk % 4); }
inline int w4_code(const uint8_t* cell, int row, int kk) {
  const uint8_t b = cell[w4_byte(row, kk)];
  return (kk % 8) < 4 ? (b & 15) : (b >> 4);
}
inline void set_w4_code(uint8_t* cell, int row, int kk, int code) {
  uint8_t& b = cell[w4_byte(row, kk)];
  if ((kk % 8) < 4) b = static_cast<uint8_t>((b & 0xF0) | (code & 15));
  else b = static_cast<uint8_t>((b & 0x0F) | ((code & 15) << 4));
}

// W8: block kk/4 of 64 bytes; byte 4*row + kk%4, int8.
inline int64_t w8_byte(int row, int kk) { return (kk / 4) * 64 + 4 * row + (kk % 4); }
inline int w8_code(const uint8_t* cell, int row, int kk) {
  return static_cast<int8_t>(cell[w8_byte(row, kk)]);
}
inline void set_w8_code(uint8_t* cell, int row, int kk, int code) {
  cell[w8_byte(row, kk)] = static_cast<uint8_t>(static_cast<int8_t>(code));
}

// W6: low nibble as W4; the top 2 bits in high block kk/16 (after the 8 G nibble bytes),
// byte 4*row + kk%4, bit pair (kk%16)/4 (packed.h).
inline int64_t w6_high_byte(int32_t group, int row, int kk) {
  return int64_t{group} * 8 + (kk / 16) * 64 + 4 * row + (kk % 4);
}
inline int w6_high_shift(int kk) { return 2 * ((kk % 16) / 4); }

// Row `row`'s codes code[0 .. n) (n % 16 == 0) written whole bytes at a time: W4 nibbles
// (codes 0..15) into a cell's nibble blocks, and for W6 (codes 0..63) the top 2 bits into
// the high plane `high` as well. A repack writes every byte of a row this way instead of
// one read-modify-write per code.
inline void put_w4_row(uint8_t* cell, int row, const uint8_t* code, int n) {
  for (int b = 0; b < n / 8; ++b)
    for (int i = 0; i < 4; ++i)
      cell[b * 64 + 4 * row + i] =
          static_cast<uint8_t>((code[8 * b + i] & 15) | (code[8 * b + 4 + i] & 15) << 4);
}
inline void put_w6_row(uint8_t* cell, uint8_t* high, int row, const uint8_t* code, int n) {
  put_w4_row(cell, row, code, n);
  for (int m = 0; m < n / 16; ++m)
    for (int i = 0; i < 4; ++i) {
      const uint8_t* c = code + 16 * m + i;
      high[m * 64 + 4 * row + i] =
          static_cast<uint8_t>(c[0] >> 4 | (c[4] >> 4) << 2 | (c[8] >> 4) << 4 | (c[12] >> 4) << 6);
    }
}
inline int w6_code(const uint8_t* cell, int32_t group, int row, int kk) {
  const int hi = (cell[w6_high_byte(group, row, kk)] >> w6_high_shift(kk)) & 3;
  return w4_code(cell, row, kk) | (hi << 4);
}
inline void set_w6_code(uint8_t* cell, int32_t group, int row, int kk, int code) {
  set_w4_code(cell, row, kk, code & 15);
  uint8_t& b = cell[w6_high_byte(group, row, kk)];
  const int sh = w6_high_shift(kk);
  b = static_cast<uint8_t>((b & ~(3 << sh)) | (((code >> 4) & 3) << sh));
}

// Offsets of the per-row tails after the codes.
inline int64_t codes_bytes(const PackedFormat& f) {
  return f.is_w4() || f.kind == PackedKind::kQ4K || f.kind == PackedKind::kMxfp4 ? 8 * f.group
         : f.kind == PackedKind::kQ5K                                            ? 10 * f.group
         : f.kind == PackedKind::kW6 || f.kind == PackedKind::kQ6K               ? 12 * f.group
                                                                                 : 16 * f.group;
}

// Q4K (packed.h): sub-block scale sc_j and min m_j (u8, 0..63) of row r; d and dmin fp16;
// then the codes (W4 layout) from byte kQ4KCodes.
inline int64_t q4k_sc_byte(int j, int row) {
  return 16 * j + row;
}
inline int64_t q4k_m_byte(int j, int row) {
  return 128 + 32 * (j / 2) + 2 * row + j % 2;
}
constexpr int64_t kQ4KDOffset = 256;
constexpr int64_t kQ4KDminOffset = 288;
constexpr int64_t kQ4KCodes = 320;
// Q6K (packed.h): sub-block scale sc_j (s8) of row r in pairs; d fp16; then the codes (W6
// layout, group 256) from byte kQ6KCodes.
inline int64_t q6k_sc_byte(int j, int row) {
  return 32 * (j / 2) + 2 * row + j % 2;
}
constexpr int64_t kQ6KDOffset = 256;
constexpr int64_t kQ6KCodes = 288;
// Q6K codes: chunk kk / 16 of 192 bytes, a W6 group of 16 (packed.h).
inline const uint8_t* q6k_chunk(const uint8_t* cell, int kk) {
  return cell + kQ6KCodes + 192 * (kk / 16);
}
inline uint8_t* q6k_chunk(uint8_t* cell, int kk) {
  return cell + kQ6KCodes + 192 * (kk / 16);
}
// Q5K (packed.h): the per-row fields of Q4K (q4k_sc_byte, q4k_m_byte, kQ4KDOffset,
// kQ4KDminOffset), then the codes from byte kQ5KCodes in chunks of 320 bytes per 32 k: the
// W4 nibble blocks of a group of 32, then a high block whose byte 4 r + kk % 4 holds bit 4
// of code (r, kk) in bit kk / 4 (kk within the chunk, 0..31).
constexpr int64_t kQ5KCodes = 320;
constexpr int64_t kQ5KChunk = 320;
inline const uint8_t* q5k_chunk(const uint8_t* cell, int kk) {
  return cell + kQ5KCodes + kQ5KChunk * (kk / 32);
}
inline uint8_t* q5k_chunk(uint8_t* cell, int kk) {
  return cell + kQ5KCodes + kQ5KChunk * (kk / 32);
}
// Code (0..31) of row r at kk (0..31) of a Q5K chunk.
inline int q5k_code(const uint8_t* chunk, int row, int kk) {
  return w4_code(chunk, row, kk) | ((chunk[256 + 4 * row + kk % 4] >> (kk / 4)) & 1) << 4;
}
// Row `row`'s 32 codes (0..31) of one Q5K chunk, whole bytes at a time (as put_w6_row).
inline void put_q5k_row(uint8_t* chunk, int row, const uint8_t* code) {
  put_w4_row(chunk, row, code, 32);
  for (int i = 0; i < 4; ++i) {
    int bits = 0;
    for (int m = 0; m < 8; ++m) bits |= ((code[4 * m + i] >> 4) & 1) << m;
    chunk[256 + 4 * row + i] = static_cast<uint8_t>(bits);
  }
}
// MXFP4 (packed.h): the E2M1 codes in the W4 layout, then row r's E8M0 byte at 256 + r.
constexpr int64_t kMxfp4ExpOffset = 256;
inline int64_t scales_offset(const PackedFormat& f) { return codes_bytes(f); }
inline int64_t mins_offset(const PackedFormat& f) { return codes_bytes(f) + 32; }  // W4 asym
inline int64_t sums_offset(const PackedFormat& f) { return codes_bytes(f) + 32; }  // W8

inline uint16_t get_u16(const uint8_t* p, int i) {
  uint16_t v;
  std::memcpy(&v, p + 2 * i, 2);
  return v;
}
inline void set_u16(uint8_t* p, int i, uint16_t v) { std::memcpy(p + 2 * i, &v, 2); }

inline float scale(const PackedFormat& f, const uint8_t* cell, int row) {
  return f16_to_f32(get_u16(cell + scales_offset(f), row));
}
inline float min(const PackedFormat& f, const uint8_t* cell, int row) {
  return f16_to_f32(get_u16(cell + mins_offset(f), row));
}
inline int16_t sum(const PackedFormat& f, const uint8_t* cell, int row) {
  return static_cast<int16_t>(get_u16(cell + sums_offset(f), row));
}

}  // namespace edge::cell
