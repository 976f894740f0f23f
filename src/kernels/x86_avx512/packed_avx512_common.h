// Helpers shared by the AVX-512 packed-kernel files (packed_avx512vnni.cpp,
// packed_q4k_avx512vnni.cpp), both compiled with the same AVX-512 flags. Included only by
// them; everything here has internal linkage, so no portable code can pick up this copy.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/packed_api.h"

namespace edge {
namespace {

inline __m512 load_half16(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// The 4 bytes at p in every int32 lane (4 activation codes, or two int16 sums).
inline __m512i bcast32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Rows of the panel that exist (the last panel may be short).
inline __mmask16 row_mask(const PackedMatrixView& w, int64_t p) {
  const int64_t valid = w.n - p * 16;
  return valid >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << valid) - 1);
}

}  // namespace
}  // namespace edge
