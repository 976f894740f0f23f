#include "runtime/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace edge {
namespace {

std::vector<float> ramp_logits(int n) {
  std::vector<float> l(n);
  for (int i = 0; i < n; ++i) l[i] = std::sin(0.37f * i) * 3.f;
  return l;
}

TEST(Sampler, GreedyIsArgmax) {
  auto l = ramp_logits(100);
  Sampler s(SamplingParams::greedy());
  EXPECT_EQ(s.sample(l, {}), argmax(l));
}

TEST(Sampler, TopKOfOneIsGreedy) {
  auto l = ramp_logits(100);
  SamplingParams p;
  p.temperature = 1.5f;
  p.top_k = 1;
  Sampler s(p);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s.sample(l, {}), argmax(l));
}

TEST(Sampler, SameSeedSameTokensOtherSeedDiffers) {
  auto l = ramp_logits(200);
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.f;
  p.min_p = 0.f;
  p.seed = 42;
  Sampler a(p), b(p);
  p.seed = 43;
  Sampler c(p);
  std::vector<int32_t> ta, tb, tc;
  for (int i = 0; i < 50; ++i) {
    ta.push_back(a.sample(l, {}));
    tb.push_back(b.sample(l, {}));
    tc.push_back(c.sample(l, {}));
  }
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
}

TEST(Sampler, FrequenciesFollowSoftmax) {
  // Three tokens with probabilities 0.6/0.3/0.1 at temperature 1.
  std::vector<float> l = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
  SamplingParams p;
  p.temperature = 1.f;
  p.top_k = 0;
  p.top_p = 1.f;
  p.min_p = 0.f;
  p.seed = 7;
  Sampler s(p);
  int counts[3] = {0, 0, 0};
  const int n = 20000;
  for (int i = 0; i < n; ++i) ++counts[s.sample(l, {})];
  EXPECT_NEAR(counts[0] / double(n), 0.6, 0.02);
  EXPECT_NEAR(counts[1] / double(n), 0.3, 0.02);
  EXPECT_NEAR(counts[2] / double(n), 0.1, 0.02);
}

TEST(Sampler, TopPAndMinPCutTheTail) {
  std::vector<float> l = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
  SamplingParams p;
  p.temperature = 1.f;
  p.top_k = 0;
  p.top_p = 0.85f;  // keeps 0.6 + 0.3
  p.min_p = 0.f;
  Sampler s(p);
  for (int i = 0; i < 2000; ++i) EXPECT_NE(s.sample(l, {}), 2);
  p.top_p = 1.f;
  p.min_p = 0.4f;  // floor 0.24: keeps 0.6 and 0.3
  Sampler m(p);
  for (int i = 0; i < 2000; ++i) EXPECT_NE(m.sample(l, {}), 2);
}

TEST(Sampler, RepetitionPenaltyMovesGreedyChoice) {
  std::vector<float> l = {2.0f, 1.9f, 0.5f};
  SamplingParams p = SamplingParams::greedy();
  p.repeat_penalty = 1.2f;  // 2.0 / 1.2 = 1.67 < 1.9
  Sampler s(p);
  std::vector<int32_t> hist = {0};
  EXPECT_EQ(s.sample(l, hist), 1);
  SamplingParams q = SamplingParams::greedy();
  q.frequency_penalty = 0.3f;
  Sampler f(q);
  std::vector<int32_t> hist2 = {1};
  EXPECT_EQ(f.sample(std::vector<float>{2.0f, 2.1f}, hist2), 0);  // 2.1 - 0.3 < 2.0
}

TEST(Sampler, ValidateRefusesNonsense) {
  SamplingParams p;
  p.temperature = -1.f;
  EXPECT_FALSE(p.validate().ok());
  p = SamplingParams();
  p.top_p = 0.f;
  EXPECT_FALSE(p.validate().ok());
  p = SamplingParams();
  p.repeat_penalty = 0.f;
  EXPECT_FALSE(p.validate().ok());
  EXPECT_TRUE(SamplingParams().validate().ok());
}

}  // namespace
}  // namespace edge
