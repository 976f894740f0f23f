#include "runtime/sampler.h"
#include "runtime/text_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
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

// NaN and inf logits (a broken model file) must neither be chosen over finite ones by
// accident nor make the sort's order undefined: NaN counts as the lowest logit, +inf as the
// highest, and every mode returns an id inside the vocabulary.
TEST(Sampler, NanAndInfLogitsHaveADefinedOrder) {
  const float nan = std::nanf(""), inf = std::numeric_limits<float>::infinity();
  std::vector<float> l = ramp_logits(300);
  for (int i = 0; i < 300; i += 7) l[i] = nan;
  l[0] = nan;
  int32_t best = 1;  // the largest finite logit
  for (int32_t i = 1; i < 300; ++i)
    if (!std::isnan(l[i]) && l[i] > l[best]) best = i;
  Sampler greedy(SamplingParams::greedy());
  EXPECT_EQ(greedy.sample(l, {}), best);
  SamplingParams p;
  p.temperature = 0.7f;
  p.seed = 5;
  Sampler hot(p);
  for (int i = 0; i < 200; ++i) EXPECT_FALSE(std::isnan(l[hot.sample(l, {})]));
  l[123] = inf;  // an infinite logit takes all the probability
  Sampler hot2(p);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(hot2.sample(l, {}), 123);
  EXPECT_EQ(greedy.sample(l, {}), 123);
  std::vector<float> all_nan(50, nan);
  p.top_k = 0;
  Sampler any(p);
  for (int i = 0; i < 20; ++i) {
    const int32_t t = any.sample(all_nan, {});
    EXPECT_TRUE(t >= 0 && t < 50) << t;
  }
  std::vector<std::pair<int32_t, float>> top;
  const float lp = token_logprob(l, 123, &top, 5);
  EXPECT_TRUE(std::isfinite(lp));
  ASSERT_EQ(top.size(), 5u);
  EXPECT_EQ(top[0].first, 123);
  for (const auto& [id, v] : top) EXPECT_FALSE(std::isnan(l[id])) << id;
}

// The sampler sorts only the head the cuts keep; with top-k / top-p / min-p active it must
// draw exactly what sorting the whole vocabulary would (the previous implementation).
int32_t sample_by_full_sort(const SamplingParams& p, std::vector<float> l, std::mt19937_64& rng) {
  struct C {
    int32_t id;
    float logit;
    float p;
  };
  std::vector<C> c(l.size());
  for (size_t i = 0; i < l.size(); ++i) c[i] = {int32_t(i), l[i], 0.f};
  std::sort(c.begin(), c.end(), [](const C& a, const C& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  });
  size_t n = p.top_k > 0 ? std::min<size_t>(c.size(), p.top_k) : c.size();
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    c[i].p = static_cast<float>(std::exp((double{c[i].logit} - c[0].logit) / p.temperature));
    sum += c[i].p;
  }
  for (size_t i = 0; i < n; ++i) c[i].p = static_cast<float>(c[i].p / sum);
  if (p.top_p < 1.f) {
    double cum = 0;
    for (size_t i = 0; i < n; ++i)
      if ((cum += c[i].p) >= p.top_p) {
        n = i + 1;
        break;
      }
  }
  if (p.min_p > 0.f) {
    size_t keep = 1;
    while (keep < n && c[keep].p >= c[0].p * p.min_p) ++keep;
    n = keep;
  }
  double total = 0;
  for (size_t i = 0; i < n; ++i) total += c[i].p;
  double r = std::uniform_real_distribution<double>(0.0, total)(rng);
  for (size_t i = 0; i < n; ++i)
    if ((r -= c[i].p) <= 0.0) return c[i].id;
  return c[n - 1].id;
}

TEST(Sampler, PartialSelectionDrawsWhatAFullSortWould) {
  std::mt19937 gen(7);
  std::normal_distribution<float> d(0.f, 2.5f);
  std::vector<float> l(50000);
  for (float& v : l) v = d(gen);
  struct Case {
    int32_t top_k;
    float top_p, min_p, temp;
  };
  for (const Case& k : {Case{0, 0.95f, 0.f, 1.f}, Case{0, 1.f, 0.05f, 0.8f},
                        Case{40, 0.95f, 0.05f, 0.8f}, Case{0, 0.999f, 0.f, 2.f},
                        Case{1000, 0.9f, 0.01f, 1.5f}}) {
    SamplingParams p;
    p.top_k = k.top_k, p.top_p = k.top_p, p.min_p = k.min_p, p.temperature = k.temp;
    p.seed = 99;
    Sampler s(p);
    std::mt19937_64 ref_rng(p.seed);
    for (int i = 0; i < 30; ++i)
      ASSERT_EQ(s.sample(l, {}), sample_by_full_sort(p, l, ref_rng))
          << "top_k " << k.top_k << " top_p " << k.top_p << " min_p " << k.min_p << " draw " << i;
  }
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

namespace edge {
namespace {

TEST(Sampler, AllowedSetIsAllThatCanBeDrawn) {
  // A guide's allowed set wins over larger logits elsewhere: greedy picks the best allowed
  // id, and a hot temperature over 500 draws never leaves the set.
  auto l = ramp_logits(300);
  const std::vector<int32_t> allowed = {5, 77, 150, 299, 1000 /* outside: ignored */};
  Sampler greedy(SamplingParams::greedy());
  int32_t best = 5;
  for (int32_t id : {77, 150, 299})
    if (l[id] > l[best]) best = id;
  ASSERT_NE(argmax(l), best);
  EXPECT_EQ(greedy.sample(l, {}, allowed), best);
  SamplingParams p;
  p.temperature = 5.f, p.top_k = 0, p.top_p = 1.f, p.min_p = 0.f, p.seed = 3;
  Sampler hot(p);
  std::vector<int> seen(300, 0);
  for (int i = 0; i < 500; ++i) {
    const int32_t t = hot.sample(l, {}, allowed);
    ASSERT_TRUE(t == 5 || t == 77 || t == 150 || t == 299) << t;
    ++seen[t];
  }
  EXPECT_GT(seen[5] + seen[77], 0);  // more than one of them is drawn
  EXPECT_GT(seen[150] + seen[299], 0);
}

}  // namespace
}  // namespace edge
