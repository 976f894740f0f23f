// Speculative decoding (runtime/speculative.h): the prompt-lookup drafter, the step cost table
// and the draft length chosen from it (switching itself off where drafts are not taken), and
// verification that gives exactly the tokens plain decoding gives: on the trained stories260K
// checkpoint with the n-gram drafter (greedy, and greedy with a repetition penalty), and on a
// random model with an oracle drafter replaying the plain output with every other draft wrong.
// Sampling: the rejection rule draws the sampling distribution (chi-square), alone and through
// whole speculative decodes.
#include "runtime/speculative.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "convert/random_model.h"
#include "model/model.h"

namespace edge {
namespace {

const std::string kStories = std::string(EDGE_TEST_DATA) + "/stories260K";

TEST(NgramDrafter, DraftsWhatFollowedTheLatestEarlierOccurrence) {
  NgramDrafter d(2, 3);
  const std::vector<int32_t> h = {5, 1, 2, 3, 4, 9, 1, 2, 7, 8, 1, 2};
  // Suffix [1, 2] last occurred at 6 (followed by 7, 8), before that at 1.
  EXPECT_EQ(d.draft(h, 3), (std::vector<int32_t>{7, 8, 1}));
  EXPECT_EQ(d.draft(h, 1), (std::vector<int32_t>{7}));
  const std::vector<int32_t> longer = {4, 1, 2, 3, 6, 1, 2, 3};  // the 3-gram wins
  EXPECT_EQ(d.draft(longer, 2), (std::vector<int32_t>{6, 1}));
  // A repeating stretch repeats on past the end of the history.
  EXPECT_EQ(d.draft(std::vector<int32_t>{7, 1, 2, 1, 2}, 5), (std::vector<int32_t>{1, 2, 1, 2, 1}));
  EXPECT_TRUE(d.draft(std::vector<int32_t>{1, 2, 3, 4}, 4).empty());
  EXPECT_TRUE(d.draft(std::vector<int32_t>{1}, 4).empty());
}

TEST(StepCostTable, InterpolatesBetweenAndExtrapolatesPastWhatWasMeasured) {
  StepCostTable t;
  EXPECT_EQ(t.ms(1), 0.0);
  t.record(1, 10.0);
  EXPECT_DOUBLE_EQ(t.ms(3), 12.0);  // one point: the optimistic prior, +10% per token
  t.record(3, 16.0);
  EXPECT_DOUBLE_EQ(t.ms(2), 13.0);  // between
  EXPECT_DOUBLE_EQ(t.ms(5), 22.0);  // past the largest: the slope of the two largest
  EXPECT_TRUE(t.measured(3));
  EXPECT_FALSE(t.measured(2));
  // A step slowed by something else (steal) moves nothing: the median of the last eight.
  for (int i = 0; i < 7; ++i) t.record(1, 10.0);
  t.record(1, 95.0);
  EXPECT_DOUBLE_EQ(t.ms(1), 10.0);
  for (int i = 0; i < 8; ++i) t.record(1, 12.0);  // a lasting change does
  EXPECT_DOUBLE_EQ(t.ms(1), 12.0);
}

TEST(DraftController, DraftsWhatPaysAndTurnsItselfOffWhereNothingIsTaken) {
  EXPECT_DOUBLE_EQ(expected_tokens(0.0, 4), 1.0);
  EXPECT_DOUBLE_EQ(expected_tokens(1.0, 4), 5.0);
  EXPECT_NEAR(expected_tokens(0.8, 4), 3.3616, 1e-9);
  StepCostTable costs;
  DraftController c(4, 5);
  EXPECT_EQ(c.next_length(costs), 0);  // no plain step timed yet
  costs.record(1, 10.0);
  // alpha 0.5 a priori, +10% a token a priori: 1.75 tokens for 1.2 steps is the best rate.
  EXPECT_EQ(c.next_length(costs), 2);
  costs.record(3, 11.0), costs.record(5, 13.0);
  c.on_verify(4, 4);
  EXPECT_EQ(c.next_length(costs), 4);  // everything taken and verify steps cheap: all four
  // Flat up to three tokens, dear beyond (a register tile's edge): at alpha ~0.8 two drafts
  // give the most tokens per millisecond.
  StepCostTable dear;
  dear.record(1, 10.0), dear.record(3, 11.0), dear.record(5, 30.0);
  for (int i = 0; i < 4; ++i) c.on_verify(4, 3);
  EXPECT_NEAR(c.alpha(), 0.78, 0.01);
  EXPECT_EQ(c.next_length(dear), 2);
  // Nothing taken for a while: off for the cooldown, then a one-draft probe.
  for (int i = 0; i < 60; ++i) c.on_verify(2, 0);
  EXPECT_LT(c.alpha(), 0.05);
  EXPECT_EQ(c.next_length(dear), 0);
  EXPECT_TRUE(c.off());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(c.next_length(dear), 0) << i;
  EXPECT_EQ(c.next_length(dear), 1);  // the probe
  c.on_verify(1, 1);                  // taken: drafting goes on
  EXPECT_FALSE(c.off());
  EXPECT_EQ(c.next_length(dear), 1);
}

// A sequence whose drafts are never taken: a few verify steps, then off, each refused probe
// doubling the time off up to eight cooldowns.
TEST(DraftController, RefusedProbesBackOffFurther) {
  StepCostTable costs;
  costs.record(1, 10.0), costs.record(2, 10.6), costs.record(3, 12.0), costs.record(5, 14.7);
  DraftController c(4, 5);
  int verify_steps = 0;
  while (c.next_length(costs) > 0 && verify_steps < 50) c.on_verify(1, 0), ++verify_steps;
  EXPECT_LE(verify_steps, 8);  // 1.06 a verify step: off once the estimate is under ~9%
  for (int32_t off : {5, 10, 20, 40, 40}) {
    for (int i = 0; i < off; ++i) ASSERT_EQ(c.next_length(costs), 0) << off << " " << i;
    ASSERT_EQ(c.next_length(costs), 1) << off;
    c.on_verify(1, 0);
    EXPECT_TRUE(c.off());
  }
}

// The rejection rule draws exactly the sampling distribution whatever the draft: 200000
// verifications of a likely and of an unlikely draft against softmax(logits / T), by
// Pearson's chi-square (7 degrees of freedom; 40 is exceeded with probability ~1e-6).
TEST(SamplerVerify, TheRejectionRuleDrawsTheSamplingDistribution) {
  const std::vector<float> logits = {2.0f, 1.5f, 0.2f, -0.5f, 1.0f, 0.0f, -1.0f, 0.7f};
  SamplingParams p;
  p.temperature = 0.9f, p.top_k = 0, p.top_p = 1.0f, p.min_p = 0.0f, p.seed = 7;
  std::vector<double> want(logits.size());
  double z = 0;
  for (size_t i = 0; i < logits.size(); ++i) z += want[i] = std::exp(logits[i] / p.temperature);
  for (double& w : want) w /= z;
  for (int32_t draft : {0, 6}) {
    Sampler s(p);
    std::vector<int64_t> seen(logits.size(), 0);
    constexpr int kDraws = 200000;
    int64_t taken = 0;
    for (int i = 0; i < kDraws; ++i) {
      const int32_t got = s.verify(logits, {}, draft);
      ++seen[static_cast<size_t>(got)];
      taken += got == draft;
    }
    double chi2 = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      const double e = want[i] * kDraws;
      chi2 += (seen[i] - e) * (seen[i] - e) / e;
    }
    EXPECT_LT(chi2, 40.0) << "draft " << draft;
    EXPECT_NEAR(double(taken) / kDraws, want[static_cast<size_t>(draft)], 0.005);
  }
  // Greedy: the argmax, taken only when the draft is it.
  Sampler g(SamplingParams::greedy());
  EXPECT_EQ(g.verify(logits, {}, 0), 0);
  EXPECT_EQ(g.verify(logits, {}, 4), 0);
}

struct Decoded {
  std::vector<int32_t> tokens;
  SpeculativeStats stats;
};

Decoded plain(const Model& m, const std::vector<int32_t>& prompt, int n, const SamplingParams& p) {
  auto st = InferenceState::create(m, m.config().max_ctx);
  EXPECT_TRUE(st.ok());
  Sampler s(p);
  std::vector<int32_t> history = prompt;
  auto logits = st->forward(prompt);
  Decoded r;
  for (int i = 0; i < n; ++i) {
    const int32_t id = s.sample(*logits, history);
    history.push_back(id);
    r.tokens.push_back(id);
    if (i + 1 == n || st->n_past() >= st->n_ctx()) break;
    logits = st->forward(std::span<const int32_t>(&id, 1));
  }
  return r;
}

Decoded speculative(const Model& m, const std::vector<int32_t>& prompt, int n,
                    const SamplingParams& p, Drafter& d) {
  auto st = InferenceState::create(m, m.config().max_ctx);
  EXPECT_TRUE(st.ok());
  Sampler s(p);
  auto logits = st->forward(prompt);
  EXPECT_TRUE(logits.ok());
  DraftController c(4);
  StepCostTable costs;
  Decoded r;
  const Status done = decode_speculative(
      *st, *logits, prompt, n, s, d, c, costs,
      [&](int32_t id) {
        r.tokens.push_back(id);
        return true;
      },
      &r.stats);
  EXPECT_TRUE(done.ok()) << done.to_string();
  // The cache holds the prompt and every token but the last, as after plain decoding.
  EXPECT_EQ(st->n_past(), static_cast<int64_t>(prompt.size() + r.tokens.size()) - 1);
  return r;
}

TEST(Speculative, Stories260KNgramDraftsGiveThePlainGreedyTokens) {
  LoadOptions o;
  o.n_threads = 2;
  auto m = Model::load(kStories + "/stories260K.bin", o);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  for (const char* file : {"greedy_bos.json", "greedy_p1.json", "greedy_p2.json"}) {
    std::ifstream f(kStories + "/" + file);
    const std::vector<int32_t> prompt =
        nlohmann::json::parse(f)["prompt"].get<std::vector<int32_t>>();
    for (float penalty : {1.0f, 1.1f}) {
      SamplingParams p = SamplingParams::greedy();
      p.repeat_penalty = penalty;
      NgramDrafter d;
      const Decoded want = plain(**m, prompt, 200, p);
      const Decoded got = speculative(**m, prompt, 200, p, d);
      EXPECT_EQ(got.tokens, want.tokens) << file << " penalty " << penalty;
      EXPECT_EQ(got.stats.tokens, static_cast<int64_t>(got.tokens.size()));
      if (penalty == 1.0f) {  // children's stories repeat themselves: drafts get taken
        EXPECT_GT(got.stats.accepted, 0) << file;
        std::printf("[ stories ] %s: %lld drafted, %lld accepted (%.2f), %.2f tokens per pass\n",
                    file, static_cast<long long>(got.stats.drafted),
                    static_cast<long long>(got.stats.accepted), got.stats.acceptance(),
                    got.stats.tokens_per_pass());
      }
    }
  }
}

// Replays a known continuation, every `wrong_every`-th draft token replaced by a wrong one.
class OracleDrafter final : public Drafter {
 public:
  OracleDrafter(std::vector<int32_t> prompt, std::vector<int32_t> future, int wrong_every,
                int32_t n_vocab)
      : n0_(prompt.size()),
        future_(std::move(future)),
        wrong_every_(wrong_every),
        n_vocab_(n_vocab) {}
  std::vector<int32_t> draft(std::span<const int32_t> history, int32_t max_tokens) override {
    std::vector<int32_t> out;
    for (size_t i = history.size() - n0_; i < future_.size() && out.size() < size_t(max_tokens);
         ++i) {
      const bool wrong = wrong_every_ > 0 && ++count_ % wrong_every_ == 0;
      out.push_back(wrong ? (future_[i] + 1) % n_vocab_ : future_[i]);
    }
    return out;
  }

 private:
  size_t n0_;
  std::vector<int32_t> future_;
  int wrong_every_;
  int32_t n_vocab_;
  int64_t count_ = 0;
};

// A small random model (64 wide, 512 tokens), written to a temporary file and loaded.
Expected<std::unique_ptr<Model>> random_model(const char* arch, int32_t n_layer, int32_t ctx) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("edge_spec_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  RandomModelOptions o;
  o.arch = arch;
  o.n_layer = n_layer, o.n_embd = 64, o.n_head = 4, o.n_head_kv = 2, o.n_vocab = 512, o.ctx = ctx;
  const std::string path = (dir / (std::string(arch) + ".gguf")).string();
  RETURN_IF_ERROR(write_random_model(o, path));
  auto m = Model::load(path, LoadOptions{});
  std::filesystem::remove_all(dir);  // loaded: the mapping keeps the pages
  return m;
}

TEST(Speculative, OracleDraftsOnARandomModelGiveThePlainTokens) {
  auto m = random_model("qwen3", 2, 256);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const std::vector<int32_t> prompt = {1, 20, 30, 40, 50};
  const SamplingParams p = SamplingParams::greedy();
  const Decoded want = plain(**m, prompt, 120, p);
  for (int wrong_every : {0, 2}) {
    OracleDrafter d(prompt, want.tokens, wrong_every, 512);
    const Decoded got = speculative(**m, prompt, 120, p, d);
    EXPECT_EQ(got.tokens, want.tokens) << wrong_every;
    if (wrong_every == 0) {
      EXPECT_EQ(got.stats.accepted, got.stats.drafted);
      // How long the drafts are depends on the measured step costs (under a sanitizer a verify
      // step can cost twice a plain one); the first verify step comes before any is measured.
      EXPECT_GT(got.stats.drafted, 0);
      EXPECT_GT(got.stats.tokens_per_pass(), 1.0);
    } else {
      EXPECT_LT(got.stats.accepted, got.stats.drafted);
    }
  }
  // Context edge: a sequence that fills its context stops where plain decoding stops.
  const Decoded edge_plain = plain(**m, prompt, 400, p);
  OracleDrafter d(prompt, edge_plain.tokens, 0, 512);
  EXPECT_EQ(speculative(**m, prompt, 400, p, d).tokens, edge_plain.tokens);
}

// Hybrid models (Gated DeltaNet layers beside attention): a rejected draft sends the
// recurrent state back to the copy the verify step kept after the last accepted token, so
// the output is still plain decoding's, with every other draft wrong or every third.
TEST(Speculative, HybridModelsGoBackToTheStateAfterTheLastAcceptedToken) {
  for (const char* arch : {"qwen35", "qwen3next"}) {
    auto m = random_model(arch, 4, 256);
    ASSERT_TRUE(m.ok()) << arch << ": " << m.status().to_string();
    const std::vector<int32_t> prompt = {1, 20, 30, 40, 50, 60, 70};
    const SamplingParams p = SamplingParams::greedy();
    const Decoded want = plain(**m, prompt, 80, p);
    for (int wrong_every : {0, 2, 3}) {
      OracleDrafter d(prompt, want.tokens, wrong_every, 512);
      const Decoded got = speculative(**m, prompt, 80, p, d);
      EXPECT_EQ(got.tokens, want.tokens) << arch << " " << wrong_every;
      EXPECT_GT(got.stats.drafted, 0) << arch;
      if (wrong_every > 0) EXPECT_LT(got.stats.accepted, got.stats.drafted) << arch;
    }
  }
}

// Sampled speculative decoding: the first three tokens' joint distribution over 4000 seeds
// matches plain sampling's over 4000 other seeds (two-sample chi-square over the cells both
// runs saw at least 20 times in all; the bound is the 1e-6 quantile for those degrees of
// freedom, approximated as df + 5.5 sqrt(2 df)).
TEST(Speculative, SampledDraftsGiveThePlainSamplingDistribution) {
  auto m = random_model("llama", 1, 64);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const std::vector<int32_t> prompt = {1, 5, 9};
  const std::vector<int32_t> greedy = plain(**m, prompt, 3, SamplingParams::greedy()).tokens;
  SamplingParams p;
  p.temperature = 1.0f, p.top_k = 3, p.top_p = 1.0f, p.min_p = 0.0f;
  auto st = InferenceState::create(**m, 64);
  ASSERT_TRUE(st.ok());
  constexpr int kRuns = 4000;
  std::map<std::vector<int32_t>, std::array<int64_t, 2>> cells;
  SpeculativeStats total;
  for (int run = 0; run < 2 * kRuns; ++run) {
    const bool spec = run % 2 == 1;
    p.seed = static_cast<uint64_t>(run);
    Sampler s(p);
    st->reset();
    auto logits = st->forward(prompt);
    ASSERT_TRUE(logits.ok());
    std::vector<int32_t> got;
    if (spec) {
      OracleDrafter d(prompt, greedy, 0, 512);  // drafts the greedy path: often refused
      DraftController c(3);
      StepCostTable costs;
      costs.record(1, 1.0), costs.record(4, 1.0);  // drafting always pays: verify every step
      ASSERT_TRUE(decode_speculative(
                      *st, *logits, prompt, 3, s, d, c, costs,
                      [&](int32_t id) { return got.push_back(id), true; }, &total)
                      .ok());
    } else {
      std::vector<int32_t> history = prompt;
      for (int i = 0; i < 3; ++i) {
        const int32_t id = s.sample(*logits, history);
        history.push_back(id), got.push_back(id);
        if (i < 2) logits = st->forward(std::span<const int32_t>(&id, 1));
      }
    }
    ASSERT_EQ(got.size(), 3u);
    ++cells[got][spec ? 1 : 0];
  }
  EXPECT_GT(total.accepted, 0);
  EXPECT_LT(total.accepted, total.drafted);
  double chi2 = 0;
  int df = -1;
  for (const auto& [k, c] : cells) {
    if (c[0] + c[1] < 20) continue;
    chi2 += double(c[0] - c[1]) * double(c[0] - c[1]) / double(c[0] + c[1]);
    ++df;
  }
  ASSERT_GT(df, 5);
  EXPECT_LT(chi2, df + 5.5 * std::sqrt(2.0 * df)) << df << " degrees of freedom";
}

}  // namespace
}  // namespace edge
