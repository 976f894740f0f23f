// Speculative decoding (runtime/speculative.h): the prompt-lookup drafter, the adaptive draft
// length switching itself off where drafts are not taken, and verification that gives exactly
// the tokens plain decoding gives: on the trained stories260K checkpoint with the n-gram
// drafter (greedy, and greedy with a repetition penalty), and on a random model with an oracle
// drafter replaying the plain output with every other draft wrong. Models with recurrent
// layers and random sampling are reported as not supported.
#include "runtime/speculative.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
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

TEST(DraftController, TurnsItselfOffWhereDraftsAreNotTakenAndProbesAgain) {
  DraftController c(4, 5);
  EXPECT_EQ(c.next_length(), 4);
  c.on_plain(10.0);
  c.on_verify(4, 0, 12.0);  // nothing taken, a dearer step: not worth it
  for (int i = 0; i < 5; ++i) EXPECT_EQ(c.next_length(), 0) << i;
  EXPECT_EQ(c.next_length(), 1);  // the probe
  c.on_verify(1, 1, 10.5);        // taken: keep going, longer
  EXPECT_EQ(c.next_length(), 2);
  c.on_verify(2, 2, 11.0);
  EXPECT_EQ(c.next_length(), 3);
  c.on_verify(3, 1, 11.0);  // one of three: back to two
  EXPECT_EQ(c.next_length(), 2);
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

Decoded speculative(const Model& m, const std::vector<int32_t>& prompt, int n, const SamplingParams& p,
                Drafter& d) {
  auto st = InferenceState::create(m, m.config().max_ctx);
  EXPECT_TRUE(st.ok());
  EXPECT_TRUE(speculation_supported(p, *st));
  Sampler s(p);
  auto logits = st->forward(prompt);
  EXPECT_TRUE(logits.ok());
  DraftController c(4);
  Decoded r;
  const Status done = decode_speculative(*st, *logits, prompt, n, s, d, c,
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
    const std::vector<int32_t> prompt = nlohmann::json::parse(f)["prompt"].get<std::vector<int32_t>>();
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
        std::printf("[ stories ] %s: %lld drafted, %lld accepted (%.2f), %.2f tokens per pass\n", file,
                    static_cast<long long>(got.stats.drafted), static_cast<long long>(got.stats.accepted),
                    got.stats.acceptance(), got.stats.tokens_per_pass());
      }
    }
  }
}

// Replays a known continuation, every `wrong_every`-th draft token replaced by a wrong one.
class OracleDrafter final : public Drafter {
 public:
  OracleDrafter(std::vector<int32_t> prompt, std::vector<int32_t> future, int wrong_every, int32_t n_vocab)
      : n0_(prompt.size()), future_(std::move(future)), wrong_every_(wrong_every), n_vocab_(n_vocab) {}
  std::vector<int32_t> draft(std::span<const int32_t> history, int32_t max_tokens) override {
    std::vector<int32_t> out;
    for (size_t i = history.size() - n0_; i < future_.size() && out.size() < size_t(max_tokens); ++i) {
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

TEST(Speculative, OracleDraftsOnARandomModelGiveThePlainTokens) {
  const auto dir = std::filesystem::temp_directory_path() / ("edge_spec_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  RandomModelOptions o;
  o.arch = "qwen3";
  o.n_layer = 2, o.n_embd = 64, o.n_head = 4, o.n_head_kv = 2, o.n_vocab = 512, o.ctx = 256;
  const std::string path = (dir / "q.gguf").string();
  ASSERT_TRUE(write_random_model(o, path).ok());
  auto m = Model::load(path, LoadOptions{});
  ASSERT_TRUE(m.ok());
  const std::vector<int32_t> prompt = {1, 20, 30, 40, 50};
  const SamplingParams p = SamplingParams::greedy();
  const Decoded want = plain(**m, prompt, 120, p);
  for (int wrong_every : {0, 2}) {
    OracleDrafter d(prompt, want.tokens, wrong_every, 512);
    const Decoded got = speculative(**m, prompt, 120, p, d);
    EXPECT_EQ(got.tokens, want.tokens) << wrong_every;
    if (wrong_every == 0) {
      EXPECT_EQ(got.stats.accepted, got.stats.drafted);
      EXPECT_GT(got.stats.tokens_per_pass(), 3.0);
    } else {
      EXPECT_LT(got.stats.accepted, got.stats.drafted);
    }
  }
  // Context edge: a sequence that fills its context stops where plain decoding stops.
  const Decoded edge_plain = plain(**m, prompt, 400, p);
  OracleDrafter d(prompt, edge_plain.tokens, 0, 512);
  EXPECT_EQ(speculative(**m, prompt, 400, p, d).tokens, edge_plain.tokens);
  SamplingParams hot;
  auto st = InferenceState::create(**m, 64);
  EXPECT_FALSE(speculation_supported(hot, *st));  // random sampling: not (yet) speculative
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace edge
