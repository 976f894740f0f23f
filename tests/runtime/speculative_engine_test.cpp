// Speculative decoding in the engine's scheduler (EngineOptions::speculative): on the trained
// stories260K checkpoint, whose stories repeat themselves so n-gram drafts get taken, requests
// decoded together with drafts give exactly the tokens of the same requests without (greedy,
// with a repetition penalty, stopping inside a draft at max_tokens), and the golden greedy
// continuation; a prompt whose blocks were committed by verify steps is reused from the prefix
// cache with the same tokens; a sliding-window model (gemma3, window 8) decodes the same with
// drafts as without; sampled requests finish at their length; a hybrid model's recurrent
// state goes back after rejected drafts; an unknown drafter is refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "convert/random_model.h"
#include "core/memory_ledger.h"
#include "edge/engine.h"
#include "model/kv_layout.h"
#include "model/model.h"
#include "model/model_test_util.h"

namespace edge {
namespace {

using namespace std::chrono_literals;

const std::string kStories = std::string(EDGE_TEST_DATA) + "/stories260K";

using testing::load_or_die;

std::string random_model(RandomModelOptions o, const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("edge_spec_engine_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string p = (dir / (name + ".gguf")).string();
  const Status written = write_random_model(o, p);
  EXPECT_TRUE(written.ok()) << written.to_string();
  return p;
}

struct Result {
  std::vector<int32_t> tokens;
  std::string finish;
  int64_t cached = 0;
};

Result drain(Engine& e, const RequestHandle& h) {
  Result r;
  for (;;) {
    auto c = e.next(h, 30s);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    if (!c.ok()) return r;
    r.tokens.insert(r.tokens.end(), c->tokens.begin(), c->tokens.end());
    if (c->kind != ChunkKind::kTokens) {
      r.finish = c->finish_reason;
      r.cached = c->cached_prompt_tokens;
      return r;
    }
  }
}

// Submits every request at once and reads them side by side.
std::vector<Result> run_together(Engine& e, const std::vector<GenerateRequest>& reqs) {
  auto s = e.open_session();
  EXPECT_TRUE(s.ok());
  std::vector<RequestHandle> hs;
  for (const GenerateRequest& g : reqs) {
    auto h = e.submit(*s, g);
    EXPECT_TRUE(h.ok()) << h.status().to_string();
    if (h.ok()) hs.push_back(*h);
  }
  std::vector<Result> out(hs.size());
  std::vector<std::thread> readers;
  for (size_t i = 0; i < hs.size(); ++i) readers.emplace_back([&, i] { out[i] = drain(e, hs[i]); });
  for (auto& t : readers) t.join();
  return out;
}

std::unique_ptr<Engine> engine(const Model& m, const std::string& spec, int64_t ctx = 256) {
  EngineOptions o;
  o.max_model_len = ctx;
  o.kv_type = "f32";
  o.speculative = spec;
  auto e = Engine::create(m, o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(*e) : nullptr;
}

GenerateRequest greedy(std::vector<int32_t> prompt, int32_t max_tokens, float penalty = 1.0f) {
  GenerateRequest g;
  g.prompt = std::move(prompt);
  g.params.max_tokens = max_tokens;
  g.params.ignore_eos = true;
  g.params.sampling.repeat_penalty = penalty;
  return g;
}

TEST(SpeculativeEngine, Stories260KBatchGivesThePlainTokensAndTheGolden) {
  auto m = load_or_die(kStories + "/stories260K.bin");
  ASSERT_TRUE(m);
  std::vector<GenerateRequest> reqs;
  std::vector<std::vector<int32_t>> golden;
  for (const char* file : {"greedy_bos.json", "greedy_p1.json", "greedy_p2.json"}) {
    std::ifstream f(kStories + "/" + file);
    const auto j = nlohmann::json::parse(f);
    const auto prompt = j["prompt"].get<std::vector<int32_t>>();
    golden.push_back(j["greedy"].get<std::vector<int32_t>>());
    reqs.push_back(greedy(prompt, 120));
    reqs.push_back(greedy(prompt, 37, 1.1f));  // ends inside a draft, most likely
  }
  auto plain = engine(*m, "");
  auto spec = engine(*m, "ngram");
  ASSERT_TRUE(plain && spec);
  const auto want = run_together(*plain, reqs);
  const auto got = run_together(*spec, reqs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].tokens, want[i].tokens) << "request " << i;
    EXPECT_EQ(got[i].tokens.size(), static_cast<size_t>(reqs[i].params.max_tokens)) << i;
    EXPECT_EQ(got[i].finish, "length");
  }
  for (size_t g = 0; g < golden.size(); ++g) {
    const auto& t = got[2 * g].tokens;
    ASSERT_LE(t.size(), golden[g].size());
    EXPECT_TRUE(std::equal(t.begin(), t.end(), golden[g].begin())) << "golden " << g;
  }
  const EngineStats st = spec->stats();
  EXPECT_GT(st.spec_verify_steps, 0u);
  EXPECT_GT(st.spec_accepted, 0u);
  EXPECT_LE(st.spec_accepted, st.spec_drafted);
  EXPECT_EQ(plain->stats().spec_drafted, 0u);
  // Fewer forward steps than tokens: drafts were taken.
  std::printf("[ spec engine ] %llu verify slices, %llu drafted, %llu accepted\n",
              static_cast<unsigned long long>(st.spec_verify_steps),
              static_cast<unsigned long long>(st.spec_drafted),
              static_cast<unsigned long long>(st.spec_accepted));
  EXPECT_EQ(st.kv_blocks_used, 0);
  // The blocks verify steps committed serve the same prompt again, with the same tokens.
  std::vector<int32_t> again = reqs[0].prompt;
  again.insert(again.end(), got[0].tokens.begin(), got[0].tokens.begin() + 90);
  const auto a = run_together(*spec, {greedy(again, 20)});
  const auto b = run_together(*plain, {greedy(again, 20)});
  EXPECT_GT(a[0].cached, 32);
  EXPECT_EQ(a[0].tokens, b[0].tokens);
}

TEST(SpeculativeEngine, SlidingWindowModelDecodesTheSameWithDrafts) {
  RandomModelOptions o;
  o.arch = "gemma3";
  o.n_layer = 3;
  o.n_embd = 64;
  o.n_vocab = 512;
  o.sliding_window = 8;
  auto m = load_or_die(random_model(o, "gemma3"));
  ASSERT_TRUE(m);
  std::vector<GenerateRequest> reqs;
  for (int i = 0; i < 3; ++i) reqs.push_back(greedy({1, 5 + i, 9, 5 + i, 9, 5 + i}, 90 + 7 * i));
  auto plain = engine(*m, "", 128);
  auto spec = engine(*m, "ngram", 128);
  const auto want = run_together(*plain, reqs);
  const auto got = run_together(*spec, reqs);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].tokens, want[i].tokens) << i;
  const EngineStats st = spec->stats();
  std::printf("[ sliding ] %llu verify slices, %llu drafted, %llu accepted\n",
              static_cast<unsigned long long>(st.spec_verify_steps),
              static_cast<unsigned long long>(st.spec_drafted),
              static_cast<unsigned long long>(st.spec_accepted));
  EXPECT_GT(st.spec_accepted, 0u);  // greedy on random weights settles into a loop
  EXPECT_EQ(spec->stats().kv_blocks_used, 0);
}

TEST(SpeculativeEngine, SampledRequestsFinishAtTheirLength) {
  auto m = load_or_die(kStories + "/stories260K.bin");
  ASSERT_TRUE(m);
  auto spec = engine(*m, "ngram");
  std::vector<GenerateRequest> reqs;
  for (int i = 0; i < 4; ++i) {
    GenerateRequest g = greedy({1, 403, 407, 261, 378}, 60 + i);
    g.params.sampling = SamplingParams{};
    g.params.sampling.temperature = 0.7f;
    g.params.sampling.seed = 11 + static_cast<uint64_t>(i);
    reqs.push_back(g);
  }
  for (const Result& r : run_together(*spec, reqs)) EXPECT_EQ(r.finish, "length");
  const auto got = run_together(*spec, reqs);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].tokens.size(), 60 + i);
  EXPECT_GT(spec->stats().spec_verify_steps, 0u);
}

// A hybrid model (Gated DeltaNet beside attention): a verify step keeps each sequence's
// recurrent state after every token, and a rejected draft sends it back to the copy after
// the last accepted one; the batch decodes as without drafts, block-boundary checkpoints
// still serve the prefix cache, and the copies are on the state ledger.
TEST(SpeculativeEngine, HybridModelGoesBackToTheStateAfterTheLastAcceptedToken) {
  RandomModelOptions o;
  o.arch = "qwen35";
  o.n_layer = 4;
  o.n_embd = 64;
  o.head_dim = 32;
  o.n_vocab = 512;
  auto m = load_or_die(random_model(o, "qwen35"));
  ASSERT_TRUE(m);
  std::vector<GenerateRequest> reqs;
  for (int i = 0; i < 3; ++i) {
    std::vector<int32_t> prompt;
    for (int t = 0; t < 40; ++t) prompt.push_back(3 + (t * 37 + i * 101) % 500);
    reqs.push_back(greedy(prompt, 60 + 9 * i));
  }
  auto plain = engine(*m, "", 128);
  ASSERT_TRUE(plain);
  const auto want = run_together(*plain, reqs);
  // An oracle: each request's plain continuation, a third of its positions (hashed) wrong.
  EngineOptions eo;
  eo.max_model_len = 128;
  eo.kv_type = "f32";
  eo.speculative = "ngram";
  eo.state_checkpoints = 32;
  eo.draft_source = [&](const std::vector<int32_t>& history, int32_t max_tokens) {
    std::vector<int32_t> d;
    for (size_t r = 0; r < reqs.size(); ++r) {
      const auto& p = reqs[r].prompt;
      if (history.size() < p.size() || !std::equal(p.begin(), p.end(), history.begin())) continue;
      for (size_t at = history.size() - p.size();
           at < want[r].tokens.size() && d.size() < size_t(max_tokens); ++at)
        d.push_back((at * 2654435761u >> 9) % 3 == 0 ? (want[r].tokens[at] + 1) % 512
                                                     : want[r].tokens[at]);
    }
    return d;
  };
  const int64_t state_before = ledger_current(MemCategory::kState);
  auto e = Engine::create(*m, eo);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  auto& spec = *e;
  const KvLayout l = KvLayout::make(m->config(), KvSettings{KvType::kF32, 16});
  // Eight slots' copies of 1 + draft_max states beside the slots themselves.
  EXPECT_GE(ledger_current(MemCategory::kState) - state_before,
            (8 + 8 * 5) * l.state_bytes_per_seq());
  const auto got = run_together(*spec, reqs);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].tokens, want[i].tokens) << i;
  const EngineStats st = spec->stats();
  std::printf("[ hybrid ] %llu verify slices, %llu drafted, %llu accepted, %llu checkpoints\n",
              static_cast<unsigned long long>(st.spec_verify_steps),
              static_cast<unsigned long long>(st.spec_drafted),
              static_cast<unsigned long long>(st.spec_accepted),
              static_cast<unsigned long long>(st.state_checkpoint_saves));
  EXPECT_GT(st.spec_accepted, 0u);
  EXPECT_LT(st.spec_accepted, st.spec_drafted);  // some refused: the state went back
  EXPECT_GT(st.state_checkpoint_saves, 0u);
  // A request that continues one of them starts from a checkpoint and decodes the same.
  std::vector<int32_t> longer = reqs[0].prompt;
  longer.insert(longer.end(), want[0].tokens.begin(), want[0].tokens.begin() + 30);
  const auto a = run_together(*spec, {greedy(longer, 20)});
  const auto b = run_together(*plain, {greedy(longer, 20)});
  EXPECT_EQ(a[0].tokens, b[0].tokens);
  EXPECT_GT(a[0].cached, 0);
}

TEST(SpeculativeEngine, UnknownDraftersAndDraftLengthsAreRefused) {
  auto m = load_or_die(kStories + "/stories260K.bin");
  ASSERT_TRUE(m);
  EngineOptions eo;
  eo.max_model_len = 128;
  eo.speculative = "medusa";
  auto bad = Engine::create(*m, eo);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().to_string().find("medusa"), std::string::npos) << bad.status().to_string();
  eo.speculative = "ngram";
  eo.draft_max = 0;
  EXPECT_FALSE(Engine::create(*m, eo).ok());
}

}  // namespace
}  // namespace edge
