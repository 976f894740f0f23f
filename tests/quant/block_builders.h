// Test-side GGUF block builders, written element by element from the format's definition
// (independently of the decoders in src/quant): each builder draws random codes and
// scales, places every element's bits where the format says, and returns the values the
// format defines for them, computed with the same float operation order as the format's
// reference decoder (so the comparison is exact).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "formats/tensor.h"

namespace edge::test {

struct Built {
  std::vector<uint8_t> bytes;  // the encoded blocks
  std::vector<float> values;   // what they mean
};

inline void put_f16(uint8_t* p, uint16_t h) { std::memcpy(p, &h, 2); }
// A random fp16 scale of moderate size (normal range) and its float value.
inline uint16_t rand_f16(std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  return f32_to_f16(u(rng));
}
inline int rand_int(std::mt19937& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}
inline void set_nibble(uint8_t* b, bool high, int v) {
  *b = high ? static_cast<uint8_t>((*b & 0x0F) | (v << 4)) : static_cast<uint8_t>((*b & 0xF0) | v);
}

// 32-element types. Element e: 4-bit part in byte e % 16 of qs, high nibble for e >= 16;
// the 5th bit (Q5_*) is bit e of the little-endian u32 qh.
inline void build_q32(DType t, std::mt19937& rng, Built* out) {
  const bool has_min = t == DType::Q4_1 || t == DType::Q5_1;
  const bool five = t == DType::Q5_0 || t == DType::Q5_1;
  const size_t bb = t == DType::Q4_0 ? 18 : t == DType::Q4_1 ? 20 : t == DType::Q5_0 ? 22
                  : t == DType::Q5_1 ? 24 : 34;
  std::vector<uint8_t> b(bb, 0);
  const uint16_t dh = rand_f16(rng, -0.05f, 0.05f), mh = rand_f16(rng, -1.0f, 1.0f);
  const float d = f16_to_f32(dh), m = f16_to_f32(mh);
  put_f16(&b[0], dh);
  if (has_min) put_f16(&b[2], mh);
  const size_t qh_at = has_min ? 4 : 2, qs_at = qh_at + (five ? 4 : 0);
  uint32_t qh = 0;
  for (int e = 0; e < 32; ++e) {
    float v;
    if (t == DType::Q8_0) {
      const int q = rand_int(rng, -128, 127);
      b[2 + e] = static_cast<uint8_t>(static_cast<int8_t>(q));
      v = static_cast<float>(q) * d;
    } else {
      const int q = rand_int(rng, 0, five ? 31 : 15);
      set_nibble(&b[qs_at + e % 16], e >= 16, q & 15);
      if (five && (q & 16)) qh |= 1u << e;
      const int off = has_min ? 0 : (five ? 16 : 8);
      v = has_min ? static_cast<float>(q) * d + m : static_cast<float>(q - off) * d;
    }
    out->values.push_back(v);
  }
  if (five) std::memcpy(&b[qh_at], &qh, 4);
  out->bytes.insert(out->bytes.end(), b.begin(), b.end());
}

// Q4_K / Q5_K 6-bit scale j and min j into the 12-byte field.
inline void put_k4_scale_min(uint8_t* s, int j, int sc, int mn) {
  if (j < 4) {
    s[j] = static_cast<uint8_t>((s[j] & 0xC0) | sc);
    s[j + 4] = static_cast<uint8_t>((s[j + 4] & 0xC0) | mn);
  } else {
    s[j + 4] = static_cast<uint8_t>((sc & 15) | ((mn & 15) << 4));
    s[j - 4] = static_cast<uint8_t>((s[j - 4] & 0x3F) | ((sc >> 4) << 6));
    s[j] = static_cast<uint8_t>((s[j] & 0x3F) | ((mn >> 4) << 6));
  }
}

// Q4_K (144 B) / Q5_K (176 B): element e of sub-block j = e / 32; its nibble lives in
// qs[32 * (e / 64) + e % 32], high nibble when (e / 32) is odd; Q5_K's 5th bit is bit
// e / 32 of qh[e % 32]. value = (d * sc_j) * q - (dmin * m_j).
inline void build_qk45(bool five, std::mt19937& rng, Built* out) {
  std::vector<uint8_t> b(five ? 176 : 144, 0);
  const uint16_t dh = rand_f16(rng, 0.001f, 0.01f), mh = rand_f16(rng, 0.001f, 0.01f);
  put_f16(&b[0], dh);
  put_f16(&b[2], mh);
  int sc[8], mn[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = rand_int(rng, 0, 63);
    mn[j] = rand_int(rng, 0, 63);
    put_k4_scale_min(&b[4], j, sc[j], mn[j]);
  }
  const size_t qs_at = five ? 48 : 16;
  for (int e = 0; e < 256; ++e) {
    const int q = rand_int(rng, 0, five ? 31 : 15);
    set_nibble(&b[qs_at + 32 * (e / 64) + e % 32], (e / 32) % 2 == 1, q & 15);
    if (five && (q & 16)) b[16 + e % 32] |= static_cast<uint8_t>(1u << (e / 32));
    const int j = e / 32;
    const float dl = f16_to_f32(dh) * static_cast<float>(sc[j]);
    const float ml = f16_to_f32(mh) * static_cast<float>(mn[j]);
    out->values.push_back(dl * static_cast<float>(q) - ml);
  }
  out->bytes.insert(out->bytes.end(), b.begin(), b.end());
}

// Q6_K (210 B): element e, h = e / 128, w = e % 128, s = w / 32, l = w % 32: low nibble
// of ql[64h + l + 32 (s & 1)] (high nibble for s >= 2), 2 high bits at 2s in qh[32h + l];
// int8 scale scales[e / 16]; value = d * sc * (q - 32).
inline void build_q6k(std::mt19937& rng, Built* out) {
  std::vector<uint8_t> b(210, 0);
  const uint16_t dh = rand_f16(rng, 0.001f, 0.01f);
  put_f16(&b[208], dh);
  int8_t sc[16];
  for (int i = 0; i < 16; ++i) {
    sc[i] = static_cast<int8_t>(rand_int(rng, -128, 127));
    b[192 + i] = static_cast<uint8_t>(sc[i]);
  }
  for (int e = 0; e < 256; ++e) {
    const int q = rand_int(rng, 0, 63);
    const int h = e / 128, w = e % 128, s = w / 32, l = w % 32;
    set_nibble(&b[64 * h + l + 32 * (s & 1)], s >= 2, q & 15);
    b[128 + 32 * h + l] |= static_cast<uint8_t>((q >> 4) << (2 * s));
    out->values.push_back(f16_to_f32(dh) * static_cast<float>(sc[e / 16]) *
                          static_cast<float>(q - 32));
  }
  out->bytes.insert(out->bytes.end(), b.begin(), b.end());
}

// Q2_K (84 B): scales[e / 16] = scale | min << 4; 2 bits of element e (h = e / 128,
// w = e % 128) at shift 2 (w / 32) in qs[32h + w % 32]; d, dmin at 80, 82.
// Q3_K (110 B): hmask[32] | qs[64] | scales[12] | d: same 2 low bits; the high bit is
// bit e / 32 of hmask[e % 32] (clear = subtract 4); 6-bit scale i (stored + 32): low 4 bits
// in the nibble (i >= 8 ? high : low) of scales[i % 8], high 2 bits at 2 (i / 4) in
// scales[8 + i % 4].
inline void build_q23k(bool three, std::mt19937& rng, Built* out) {
  std::vector<uint8_t> b(three ? 110 : 84, 0);
  const size_t qs_at = three ? 32 : 16;
  const uint16_t dh = rand_f16(rng, 0.001f, 0.01f), mh = rand_f16(rng, 0.001f, 0.01f);
  put_f16(&b[three ? 108 : 80], dh);
  if (!three) put_f16(&b[82], mh);
  int sc[16], mn[16];
  for (int i = 0; i < 16; ++i) {
    sc[i] = rand_int(rng, 0, three ? 63 : 15);
    mn[i] = rand_int(rng, 0, 15);
    if (three) {
      set_nibble(&b[96 + i % 8], i >= 8, sc[i] & 15);
      b[96 + 8 + i % 4] |= static_cast<uint8_t>((sc[i] >> 4) << (2 * (i / 4)));
    } else {
      b[i] = static_cast<uint8_t>(sc[i] | (mn[i] << 4));
    }
  }
  for (int e = 0; e < 256; ++e) {
    const int lo = rand_int(rng, 0, 3);
    const int h = e / 128, w = e % 128;
    b[qs_at + 32 * h + w % 32] |= static_cast<uint8_t>(lo << (2 * (w / 32)));
    float v;
    if (three) {
      const bool hi = rand_int(rng, 0, 1) == 1;
      if (hi) b[e % 32] |= static_cast<uint8_t>(1u << (e / 32));
      const float dl = f16_to_f32(dh) * static_cast<float>(sc[e / 16] - 32);
      v = dl * static_cast<float>(lo - (hi ? 0 : 4));
    } else {
      const float dl = f16_to_f32(dh) * static_cast<float>(sc[e / 16]);
      const float ml = f16_to_f32(mh) * static_cast<float>(mn[e / 16]);
      v = dl * static_cast<float>(lo) - ml;
    }
    out->values.push_back(v);
  }
  out->bytes.insert(out->bytes.end(), b.begin(), b.end());
}

// MXFP4 (17 B): u8 e | qs[16]; element e < 16 in the low nibble of qs[e], e + 16 in the
// high nibble. A code's value is sign (bit 3) * {0, 0.5, 1, 1.5, 2, 3, 4, 6}[code & 7] *
// 2^(e - 127) (the OCP E2M1 and E8M0 definitions), exact in float for these exponents.
inline void build_mxfp4(std::mt19937& rng, Built* out) {
  static const float kMagnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  std::array<uint8_t, 17> b{};
  const int e = rand_int(rng, 110, 135);
  b[0] = static_cast<uint8_t>(e);
  for (int i = 0; i < 32; ++i) {
    const int code = rand_int(rng, 0, 15);
    set_nibble(&b[1 + i % 16], i >= 16, code);
    const float mag = kMagnitude[code & 7] * std::ldexp(1.0f, e - 127);
    out->values.push_back(code & 8 ? -mag : mag);
  }
  out->bytes.insert(out->bytes.end(), b.begin(), b.end());
}

// `blocks` random blocks of type t, back to back (one row of blocks * block_elems).
inline Built build_blocks(DType t, int blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  Built out;
  for (int i = 0; i < blocks; ++i) {
    switch (t) {
      case DType::Q4_K: build_qk45(false, rng, &out); break;
      case DType::Q5_K: build_qk45(true, rng, &out); break;
      case DType::Q6_K: build_q6k(rng, &out); break;
      case DType::Q2_K: build_q23k(false, rng, &out); break;
      case DType::Q3_K: build_q23k(true, rng, &out); break;
      case DType::MXFP4:
        build_mxfp4(rng, &out);
        break;
      default: build_q32(t, rng, &out); break;
    }
  }
  return out;
}

}  // namespace edge::test
