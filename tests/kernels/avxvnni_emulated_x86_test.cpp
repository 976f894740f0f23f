// The AVX-VNNI int8 tiles (kernels/x86_avx2/packed_avx2_gemm.h with kVnni = true) on any
// AVX2 CPU: this file includes the tiles with vpdpbusd replaced by an exact AVX2 emulation
// (each u8 x s8 product widened to int32), so their logic (block offsets, high-bit merges,
// rounds, scale folds, epilogues) is checked against the scalar reference even where the
// CPU lacks AVX-VNNI (AMD before Zen 5, Intel before Alder Lake), which is most CI machines.
// It does not check the real instruction: isa_test's variant report says where that ran.
// Built with the AVX2 level's flags (CMakeLists.txt: *_emulated_x86_test.cpp).
#include <immintrin.h>

namespace {
// acc + per int32 lane sum of its 4 u8 x s8 byte products, as vpdpbusd computes it.
inline __m256i emulated_dpbusd(__m256i acc, __m256i u8, __m256i s8) {
  const __m256i even_u = _mm256_and_si256(u8, _mm256_set1_epi16(0xFF));
  const __m256i odd_u = _mm256_srli_epi16(u8, 8);
  const __m256i even_s = _mm256_srai_epi16(_mm256_slli_epi16(s8, 8), 8);
  const __m256i odd_s = _mm256_srai_epi16(s8, 8);
  return _mm256_add_epi32(
      acc, _mm256_add_epi32(_mm256_madd_epi16(even_u, even_s), _mm256_madd_epi16(odd_u, odd_s)));
}
}  // namespace

#define _mm256_dpbusd_avx_epi32 emulated_dpbusd
#ifndef __AVXVNNI__
#define __AVXVNNI__ 1  // the header's guard for its VNNI branch
#endif
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_info.h"
#include "core/half.h"
#include "kernels/x86_avx2/packed_avx2_gemm.h"
#include "packed_random_cells.h"

namespace edge {
namespace {

struct Case {
  PackedKind kind;
  int32_t group;
};


void run_vnni_tile(const PackedMatrixView& w, const QuantizedActivations& a, float* y) {
  const int64_t panels = PackedFormat::panels(w.n);
  switch (w.fmt.kind) {
    case PackedKind::kW8:
      return w8_a8<true>(w, a, 0, panels, y);
    case PackedKind::kW6:
      return w6_a8<true>(w, a, 0, panels, y);
    case PackedKind::kQ4K:
      return q4k_a8<true>(w, a, 0, panels, y);
    case PackedKind::kQ5K:
      return q5k_a8<true>(w, a, 0, panels, y);
    case PackedKind::kQ6K:
      return q6k_a8<true>(w, a, 0, panels, y);
    default:
      return w4_a8<true>(w, a, 0, panels, y);
  }
}

TEST(AvxVnniEmulated, TilesMatchReference) {
  if (!cpu_info().has("avx2")) GTEST_SKIP() << "needs AVX2 (the emulation's own instructions)";
  std::vector<Case> cases;
  for (PackedKind kind :
       {PackedKind::kW4Sym, PackedKind::kW4Asym, PackedKind::kW6, PackedKind::kW8})
    for (int32_t g : {32, 64, 128}) cases.push_back({kind, g});
  for (PackedKind kind : {PackedKind::kQ4K, PackedKind::kQ5K, PackedKind::kQ6K})
    cases.push_back({kind, 256});
  int64_t checked = 0;
  for (const Case& cs : cases)
    for (int64_t rows : {16, 23, 40})
      for (int64_t tokens : {1, 3, 4, 5, 9, 17}) {
        const int64_t k = (cs.group == 256 ? 2 : 4) * cs.group;
        std::mt19937 rng(static_cast<uint32_t>(rows * 131 + tokens * 7 + cs.group));
        const std::vector<uint8_t> cells = random_cells(cs.kind, cs.group, rows, k, rng);
        const PackedMatrixView w{PackedFormat{cs.kind, cs.group}, cells.data(), rows, k};
        std::vector<float> x(tokens * k);
        for (auto& v : x) v = static_cast<float>(rng() % 2001) / 1000.0f - 1.0f;
        ActivationBuffer buf;
        QuantizedActivations qa = buf.view(tokens, k, cs.group);
        quantize_activations(reference_packed_kernels(), x.data(), qa, 0, tokens);
        std::vector<float> want(tokens * rows), got(tokens * rows, NAN);
        reference_packed_kernels().a8(cs.kind)(w, qa, 0, PackedFormat::panels(rows), want.data());
        run_vnni_tile(w, qa, got.data());
        for (int64_t i = 0; i < tokens * rows; ++i, ++checked)
          ASSERT_NEAR(got[i], want[i], 1e-4f * (1.0f + std::fabs(want[i])))
              << "kind " << static_cast<int>(cs.kind) << " g" << cs.group << " rows " << rows
              << " tokens " << tokens << " output " << i;
      }
  EXPECT_GT(checked, 10000);
}

}  // namespace
}  // namespace edge
