// The in-process pipeline runtime with real models: a one-stage LM graph gives the tokens
// the plain engine gives; a two-stage chain feeds one LM's tokens to the next; epochs are
// 1..N without gaps and each port's events are numbered with the last one terminal; an
// undersized reservation fails with "RSS exceeds stage reservation", a wrong artifact hash
// is refused, and in every case the ledger returns to zero.
#include "pipeline/graph/executor.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "convert/random_model.h"
#include "edge/engine.h"
#include "model/model.h"
#include "pipeline/graph/artifact.h"

namespace edge::pipeline {
namespace {

class PipelineRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("edge_pipeline_rt_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    RandomModelOptions o;
    o.n_layer = 2, o.n_embd = 128, o.n_vocab = 512;
    model_ = (dir_ / "lm.gguf").string();
    ASSERT_TRUE(write_random_model(o, model_).ok());
    hash_ = *sha256_file(model_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string lm_stage(const std::string& name, const std::string& reservation,
                       const std::string& hash) {
    return "  - name: " + name +
           "\n    kind: lm\n    contract: text.generate@1\n    reservation: " + reservation +
           "\n    artifacts: [{role: model, path: lm.gguf, sha256: " + hash + "}]\n";
  }
  PipelineSpec spec(const std::string& text) {
    auto p = parse_pipeline(text, dir_.string());
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    return p.ok() ? *p : PipelineSpec{};
  }
  std::vector<int32_t> engine_tokens(const std::vector<int32_t>& prompt, int n) {
    auto m = Model::load(model_);
    EngineOptions eo;
    eo.max_model_len = 256;
    auto e = Engine::create(**m, eo);
    auto s = (*e)->open_session();
    GenerateRequest g;
    g.prompt = prompt;
    g.params.max_tokens = n;
    auto h = (*e)->submit(*s, g);
    std::vector<int32_t> out;
    for (;;) {
      auto c = (*e)->next(*h, std::chrono::seconds(30));
      out.insert(out.end(), c->tokens.begin(), c->tokens.end());
      if (c->kind != ChunkKind::kTokens) return out;
    }
  }

  std::filesystem::path dir_;
  std::string model_, hash_;
};

TEST_F(PipelineRuntimeTest, OneLmStageGivesThePlainEngineTokensWithNumberedEvents) {
  const PipelineSpec p = spec(
      "stages:\n" + lm_stage("lm", "256MiB", hash_) +
      "routes: [input.prompt -> lm.prompt, lm.tokens -> output.ids, lm.text -> output.text]\n");
  RamLedger ledger(int64_t{4} << 30, "test");
  PipelineRunOptions o;
  o.ctx = 256, o.max_tokens = 12;
  {
    auto rt = PipelineRuntime::start(p, ledger, o);
    ASSERT_TRUE(rt.ok()) << rt.status().to_string();
    EXPECT_EQ(ledger.reserved(), 256 << 20);
    const std::vector<int32_t> prompt = {1, 17, 33, 49, 65};
    for (uint64_t round = 1; round <= 2; ++round) {
      std::vector<int32_t> ids;
      std::vector<StageEvent> events;
      ASSERT_TRUE((*rt)
                      ->run({{"prompt", {"", prompt}}},
                            [&](const StageEvent& e) {
                              events.push_back(e);
                              if (e.port == "ids")
                                ids.insert(ids.end(), e.value.tokens.begin(), e.value.tokens.end());
                            })
                      .ok());
      EXPECT_EQ(ids, engine_tokens(prompt, 12));
      uint64_t next_seq = 0;
      for (const StageEvent& e : events) {
        EXPECT_EQ(e.epoch, round);
        EXPECT_EQ(e.worker_generation, 0u);
        if (e.port != "ids") continue;
        EXPECT_EQ(e.seq, next_seq++);
        EXPECT_EQ(e.terminal, &e == &events[events.size() - 2]);  // the last ids event
      }
    }
    EXPECT_EQ((*rt)->epochs_issued(), 2u);
    EXPECT_GT((*rt)->state_json()["stages"][0]["loaded_rss_bytes"].get<int64_t>(), 0);
  }
  EXPECT_EQ(ledger.reserved(), 0);
}

TEST_F(PipelineRuntimeTest, TwoLmStagesChainTokensIntoTheNextPrompt) {
  const PipelineSpec p =
      spec("stages:\n" + lm_stage("a", "256MiB", hash_) + lm_stage("b", "256MiB", hash_) +
           "routes: [input.prompt -> a.prompt, a.tokens -> b.prompt, b.tokens -> output.ids]\n");
  RamLedger ledger(int64_t{4} << 30, "test");
  PipelineRunOptions o;
  o.ctx = 256, o.max_tokens = 6;
  auto rt = PipelineRuntime::start(p, ledger, o);
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  std::vector<int32_t> ids;
  ASSERT_TRUE((*rt)
                  ->run({{"prompt", {"", {5, 6, 7}}}},
                        [&](const StageEvent& e) {
                          ids.insert(ids.end(), e.value.tokens.begin(), e.value.tokens.end());
                        })
                  .ok());
  EXPECT_EQ(ids, engine_tokens(engine_tokens({5, 6, 7}, 6), 6));
}

TEST_F(PipelineRuntimeTest, AnUndersizedReservationFailsAndTheLedgerReturnsToZero) {
  const PipelineSpec p = spec("stages:\n" + lm_stage("lm", "64KiB", hash_) +
                              "routes: [input.prompt -> lm.prompt, lm.text -> output.text]\n");
  RamLedger ledger(int64_t{4} << 30, "test");
  PipelineRunOptions o;
  o.ctx = 256, o.max_tokens = 4;
  Status failure;
  auto rt = PipelineRuntime::start(p, ledger, o);
  if (!rt.ok()) {
    failure = rt.status();
  } else {
    // Mapped weights count once the forward pass has touched them.
    failure = (*rt)->run({{"prompt", {"", {1, 2, 3}}}}, [](const StageEvent&) {});
    rt->reset();
  }
  EXPECT_NE(failure.message().find("RSS exceeds stage reservation"), std::string::npos)
      << failure.to_string();
  EXPECT_EQ(ledger.reserved(), 0);
}

TEST_F(PipelineRuntimeTest, AWrongHashOrAStageThatCannotRunYetIsRefusedBeforeStarting) {
  std::string wrong = hash_;
  wrong[5] = wrong[5] == '0' ? '1' : '0';
  RamLedger ledger(int64_t{4} << 30, "test");
  auto rt =
      PipelineRuntime::start(spec("stages:\n" + lm_stage("lm", "plan", wrong) +
                                  "routes: [input.prompt -> lm.prompt, lm.text -> output.t]\n"),
                             ledger);
  ASSERT_FALSE(rt.ok());
  EXPECT_NE(rt.status().message().find("differs from the declared artifact hash"),
            std::string::npos);
  rt = PipelineRuntime::start(
      spec("stages:\n  - {name: voc, kind: vocoder, contract: audio.pcm@1, reservation: 1MiB}\n"
           "routes: [input.c -> voc.codes, voc.pcm -> output.a]\n"),
      ledger);
  ASSERT_FALSE(rt.ok());
  EXPECT_NE(rt.status().message().find("stage 'voc'"), std::string::npos) << rt.status().message();
  EXPECT_EQ(ledger.reserved(), 0);
}

}  // namespace
}  // namespace edge::pipeline
