// Random packed weight cells for the emulated-instruction tests (avxvnni_emulated_x86_test,
// amx_emulated_x86_test): random codes with sane scales for each packed kind. In an anonymous
// namespace: the two tests are compiled with different ISA flags, so no definition may be
// shared between them at link time.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernels/packed_api.h"

namespace edge {
namespace {

// Random codes with sane scales: f16 scales at each kind's offset, Q4K / Q5K 6-bit sub-block
// scales and mins, MXFP4 exponents near 2^0, W8 codes without -128 (and their row sums).
std::vector<uint8_t> random_cells(PackedKind kind, int32_t g, int64_t n, int64_t k,
                                  std::mt19937& rng) {
  const int64_t cb = packed_cell_bytes(kind, g);
  std::vector<uint8_t> m(PackedFormat::panels(n) * (k / g) * cb);
  for (auto& b : m) b = static_cast<uint8_t>(rng());
  const bool q45 = kind == PackedKind::kQ4K || kind == PackedKind::kQ5K;
  const bool super = q45 || kind == PackedKind::kQ6K;
  const int64_t scales = kind == PackedKind::kW8   ? g * 16
                         : kind == PackedKind::kW6 ? g * 12
                         : super                   ? 256
                                                   : g * 8;
  const int count = kind == PackedKind::kW4Asym || q45 ? 32 : 16;
  for (int64_t c = 0; c < static_cast<int64_t>(m.size()) / cb; ++c) {
    uint8_t* cell = m.data() + c * cb;
    if (q45)
      for (int i = 0; i < 256; ++i) cell[i] &= 0x3F;
    if (kind == PackedKind::kMxfp4) {
      for (int r = 0; r < 16; ++r) cell[scales + r] = static_cast<uint8_t>(120 + rng() % 16);
      continue;
    }
    for (int r = 0; r < count; ++r) {
      const uint16_t h = f32_to_f16(0.001f * static_cast<float>(1 + rng() % 20));
      std::memcpy(cell + scales + 2 * r, &h, 2);
    }
    if (kind != PackedKind::kW8) continue;
    for (int64_t i = 0; i < g * 16; ++i)
      if (cell[i] == 0x80) cell[i] = 0x81;
    for (int r = 0; r < 16; ++r) {
      int sum = 0;
      for (int kk = 0; kk < g; ++kk)
        sum += static_cast<int8_t>(cell[(kk / 4) * 64 + r * 4 + kk % 4]);
      const int16_t s16 = static_cast<int16_t>(sum);
      std::memcpy(cell + g * 16 + 32 + 2 * r, &s16, 2);
    }
  }
  return m;
}

}  // namespace
}  // namespace edge
