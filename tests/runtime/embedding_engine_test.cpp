// Embedding requests through the engine (GenerateRequest::pooling): the pooled vector equals
// the final-normed hidden states the single-sequence forward pass gives token by token (mean,
// first, last position), with the head's logits of the score ids at the last position; a
// prompt longer than a step is chunked and still pools every position; a repeated mean-pooled
// prompt is not served from the prefix cache (same vector); an embedding beside a generation
// changes neither.
#include <gtest/gtest.h>

#include <filesystem>

#include "convert/random_model.h"
#include "edge/engine.h"
#include "model/forward.h"
#include "model/model.h"

namespace edge {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<Model> load_model() {
  static const std::string path = [] {
    auto dir = std::filesystem::temp_directory_path() /
               ("edge_embedding_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string p = (dir / "m.gguf").string();
    RandomModelOptions o;
    o.arch = "qwen3";
    o.n_layer = 2, o.n_embd = 64, o.n_vocab = 512;
    EXPECT_TRUE(write_random_model(o, p).ok());
    return p;
  }();
  LoadOptions lo;
  lo.n_threads = 2;
  auto m = Model::load(path, lo);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(m).value();
}

// Final-normed hidden rows of every position, and the logits at the last one.
struct Reference {
  std::vector<std::vector<float>> rows;
  std::vector<float> last_logits;
};
Reference reference(const Model& m, const std::vector<int32_t>& prompt) {
  Reference r;
  auto st = InferenceState::create(m, 256);
  EXPECT_TRUE(st.ok());
  for (int32_t t : prompt) {
    auto l = st->forward(std::span<const int32_t>(&t, 1));
    EXPECT_TRUE(l.ok());
    r.last_logits.assign(l->begin(), l->end());
    const auto h = st->last_hidden();
    r.rows.emplace_back(h.begin(), h.end());
  }
  return r;
}

StreamChunk embed(Engine& e, const std::vector<int32_t>& prompt, Pooling pooling,
                  std::vector<int32_t> score_ids = {}) {
  auto s = e.open_session();
  GenerateRequest req;
  req.prompt = prompt;
  req.params.max_tokens = 1;
  req.pooling = pooling;
  req.score_ids = std::move(score_ids);
  auto h = e.submit(*s, std::move(req));
  EXPECT_TRUE(h.ok()) << h.status().to_string();
  for (;;) {
    auto c = e.next(*h, 60s);
    EXPECT_TRUE(c.ok());
    if (!c.ok() || c->kind != ChunkKind::kTokens) {
      (void)e.close_session(*s);
      return c.ok() ? *c : StreamChunk{};
    }
  }
}

// A prompt run in steps of several tokens against one token at a time: the kernels sum in
// another order (differences of a few 1e-4 after the final norm); a wrong row is O(1) off.
void expect_near(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 3e-3f * (1 + std::fabs(b[i]))) << i;
}

const std::vector<int32_t> kPrompt = {1, 17, 230, 45, 9, 300, 77, 12, 5, 401, 88, 3};

TEST(EmbeddingEngine, PoolingMatchesTheForwardPassPositionByPosition) {
  auto m = load_model();
  const Reference ref = reference(*m, kPrompt);
  EngineOptions o;
  o.max_model_len = 256;
  o.max_batched_tokens = 5;  // the prompt takes three steps
  auto e = Engine::create(*m, o);
  ASSERT_TRUE(e.ok()) << e.status().to_string();

  const StreamChunk mean = embed(**e, kPrompt, Pooling::kMean);
  EXPECT_EQ(mean.kind, ChunkKind::kDone);
  EXPECT_EQ(mean.finish_reason, "embedding");
  EXPECT_EQ(mean.prompt_tokens, static_cast<int64_t>(kPrompt.size()));
  std::vector<float> want(ref.rows[0].size(), 0.f);
  for (const auto& r : ref.rows)
    for (size_t j = 0; j < r.size(); ++j) want[j] += r[j] / static_cast<float>(ref.rows.size());
  expect_near(mean.embedding, want);

  expect_near(embed(**e, kPrompt, Pooling::kCls).embedding, ref.rows.front());
  const StreamChunk last = embed(**e, kPrompt, Pooling::kLast, {7, 300});
  expect_near(last.embedding, ref.rows.back());
  ASSERT_EQ(last.scores.size(), 2u);
  EXPECT_NEAR(last.scores[0], ref.last_logits[7], 1e-2f);
  EXPECT_NEAR(last.scores[1], ref.last_logits[300], 1e-2f);

  // Again: the prompt's blocks are cached now, but mean pooling needs every position's row.
  expect_near(embed(**e, kPrompt, Pooling::kMean).embedding, mean.embedding);
}

TEST(EmbeddingEngine, BesideAGenerationNeitherChanges) {
  auto m = load_model();
  EngineOptions o;
  o.max_model_len = 256;
  auto e = Engine::create(*m, o);
  ASSERT_TRUE(e.ok());
  auto generate = [&](bool with_embedding) {
    auto s = (*e)->open_session();
    GenerateRequest g;
    g.prompt = {1, 2, 3, 4};
    g.params.max_tokens = 12;
    auto h = (*e)->submit(*s, std::move(g));
    EXPECT_TRUE(h.ok());
    StreamChunk emb;
    if (with_embedding) emb = embed(**e, kPrompt, Pooling::kMean);
    std::vector<int32_t> tokens;
    for (;;) {
      auto c = (*e)->next(*h, 60s);
      EXPECT_TRUE(c.ok());
      if (!c.ok()) break;
      tokens.insert(tokens.end(), c->tokens.begin(), c->tokens.end());
      if (c->kind != ChunkKind::kTokens) break;
    }
    (void)(*e)->close_session(*s);
    return std::make_pair(tokens, emb.embedding);
  };
  const auto alone = generate(false);
  const auto both = generate(true);
  EXPECT_EQ(alone.first, both.first);
  expect_near(both.second, embed(**e, kPrompt, Pooling::kMean).embedding);
}

TEST(EmbeddingEngine, ScoreIdsNeedLastPositionPooling) {
  auto m = load_model();
  auto e = Engine::create(*m, EngineOptions{});
  ASSERT_TRUE(e.ok());
  auto s = (*e)->open_session();
  GenerateRequest req;
  req.prompt = kPrompt;
  req.params.max_tokens = 1;
  req.pooling = Pooling::kMean;
  req.score_ids = {1};
  EXPECT_FALSE((*e)->submit(*s, req).ok());
  req.pooling = Pooling::kLast;
  req.score_ids = {100000};
  EXPECT_FALSE((*e)->submit(*s, req).ok());
}

}  // namespace
}  // namespace edge
