// The AVX2 candidate fits must equal the scalar reference bit for bit (quantised files are
// byte-identical across machines).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "quant/quant_fit.h"

namespace edge::quant_fit {
namespace {

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void expect_same(const Fit& a, const Fit& b, const char* what, int trial) {
  EXPECT_TRUE(same_bits(a.err, b.err)) << what << " err, trial " << trial << ": " << a.err << " vs " << b.err;
  EXPECT_TRUE(same_bits(a.sq, b.sq)) << what << " sq, trial " << trial;
  EXPECT_TRUE(same_bits(a.sqq, b.sqq)) << what << " sqq, trial " << trial;
  EXPECT_TRUE(same_bits(a.sxq, b.sxq)) << what << " sxq, trial " << trial;
}

TEST(QuantFit, Avx2EqualsScalarBitForBit) {
  if (!avx2_available()) GTEST_SKIP() << "variant quant_fit_avx2 not exercised: the CPU lacks AVX2";
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int trial = 0; trial < 3000; ++trial) {
    const int g = 32 << (trial % 3);  // 32, 64, 128
    const float scale = std::ldexp(1.0f, static_cast<int>(trial % 29) - 14);
    std::vector<float> x(static_cast<size_t>(g));
    for (auto& v : x) v = normal(rng) * scale;
    if (trial % 7 == 0) x[static_cast<size_t>(trial % g)] *= 40.0f;  // an outlier: codes clamp
    if (trial % 11 == 0) std::fill(x.begin(), x.begin() + g / 2, 0.0f);
    float m = 0.0f, lo = x[0], hi = x[0];
    for (float v : x) {
      if (std::fabs(v) > std::fabs(m)) m = v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    if (m == 0.0f) continue;
    // Candidate scales as the search makes them, plus ones that push codes past the clamp.
    for (float t : {-10.0f, -8.0f, -6.5f, 6.0f, 8.5f, 30.0f, -1.5f}) {
      const float d = m / t;
      expect_same(sym_fit_scalar(x.data(), g, d), sym_fit_avx2(x.data(), g, d), "sym", trial);
    }
    if (hi > lo) {
      for (float dd : {-1.0f, 0.0f, 2.0f, 20.0f}) {
        const float s = (hi - lo) / (15.0f + dd);
        for (float mn : {lo, lo + (hi - lo) * 0.25f}) {
          expect_same(asym_fit_scalar(x.data(), g, s, mn), asym_fit_avx2(x.data(), g, s, mn), "asym",
                      trial);
        }
      }
    }
    if (HasFailure()) return;
  }
}

// The reference itself: a group that codes exactly has zero error and the textbook moments.
TEST(QuantFit, ScalarReferenceOnAnExactGroup) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i % 16 - 8) * 0.5f;
  const Fit f = sym_fit_scalar(x.data(), 32, 0.5f);
  EXPECT_EQ(f.err, 0.0f);
  float sqq = 0;
  for (int i = 0; i < 32; ++i) sqq += static_cast<float>((i % 16 - 8) * (i % 16 - 8));
  EXPECT_FLOAT_EQ(f.sqq, sqq);
  EXPECT_FLOAT_EQ(f.sxq, sqq * 0.5f);
  const Fit a = asym_fit_scalar(x.data(), 32, 0.5f, -4.0f);
  EXPECT_EQ(a.err, 0.0f);
  EXPECT_FLOAT_EQ(a.sq, 2.0f * 120.0f);
}

}  // namespace
}  // namespace edge::quant_fit
