// The text encoder's engine (runtime/encoder_engine.h): Engine::create over a BERT file
// gives it; many requests submitted at once come back each equal to bert_encode of its own
// prompt alone (batched steps change nothing); a cross-encoder ranks; generation, an input
// over the limits, rank pooling without a head and foreign handles are refused; cancel and
// close end requests; the memory plan counts no KV for it.
#include "runtime/encoder_engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "convert/random_bert.h"
#include "model/model.h"
#include "model/model_footprint.h"
#include "runtime/memory_plan.h"

namespace edge {
namespace {

using namespace std::chrono_literals;

struct Fixture {
  std::string dir, path;
  std::unique_ptr<Model> model;
  Fixture(const std::string& name, bool rerank) {
    dir = (std::filesystem::temp_directory_path() /
           ("edge_encoder_engine_" + std::to_string(::getpid()) + "_" + name))
              .string();
    std::filesystem::create_directories(dir);
    path = dir + "/bert.gguf";
    RandomBertOptions o;
    o.n_layer = 2, o.n_embd = 32, o.n_head = 4, o.n_vocab = 300, o.ctx = 32, o.seed = 3;
    o.rerank = rerank;
    EXPECT_TRUE(write_random_bert(o, path).ok());
    LoadOptions lo;
    lo.n_threads = 2;
    auto m = Model::load(path, lo);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    if (m.ok()) model = std::move(*m);
  }
  ~Fixture() { std::filesystem::remove_all(dir); }
};

std::vector<float> alone(const Model& m, const std::vector<int32_t>& ids, EncoderPooling p) {
  const std::vector<int64_t> offsets{0, static_cast<int64_t>(ids.size())};
  ThreadPool pool(1);  // the engine holds the model's pool and may be running on it
  return bert_encode(BertExec{m.kernels(), pool}, m.config(), *m.encoder_hparams(),
                     *m.encoder_weights(), ids, offsets, p);
}

StreamChunk final_chunk(Engine& e, const RequestHandle& h) {
  auto c = e.next(h, 60s);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return c.ok() ? *c : StreamChunk{};
}

TEST(EncoderEngine, BatchedRequestsEqualEachPromptAlone) {
  Fixture f("batch", false);
  ASSERT_NE(f.model, nullptr);
  EngineOptions o;
  o.max_batched_tokens = 20;  // several steps: the requests below hold 45 tokens
  o.max_seqs = 3;
  auto engine = Engine::create(*f.model, o);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  Engine& e = **engine;
  auto s = e.open_session();
  ASSERT_TRUE(s.ok());
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 7; ++i) {
    std::vector<int32_t> p{2};
    for (int j = 0; j <= i; ++j) p.push_back(10 + 7 * i + j);
    p.push_back(3);
    prompts.push_back(p);
  }
  std::vector<RequestHandle> hs;
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerateRequest r;
    r.prompt = prompts[i];
    r.pooling = i % 2 ? Pooling::kMean : Pooling::kCls;
    auto h = e.submit(*s, r);
    ASSERT_TRUE(h.ok()) << h.status().to_string();
    hs.push_back(*h);
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    const StreamChunk c = final_chunk(e, hs[i]);
    ASSERT_EQ(c.kind, ChunkKind::kDone);
    EXPECT_EQ(c.finish_reason, "embedding");
    EXPECT_EQ(c.prompt_tokens, static_cast<int64_t>(prompts[i].size()));
    const std::vector<float> want =
        alone(*f.model, prompts[i], i % 2 ? EncoderPooling::kMean : EncoderPooling::kCls);
    ASSERT_EQ(c.embedding.size(), want.size());
    for (size_t j = 0; j < want.size(); ++j) EXPECT_NEAR(c.embedding[j], want[j], 1e-5) << i;
    EXPECT_FALSE(e.next(hs[i], 1ms).ok());  // retired after its one chunk
  }
  EXPECT_EQ(e.stats().requests_finished, prompts.size());
  EXPECT_TRUE(e.close_session(*s).ok());
}

TEST(EncoderEngine, CrossEncoderRanksAndRefusalsNameTheProblem) {
  Fixture f("rank", true);
  ASSERT_NE(f.model, nullptr);
  auto engine = Engine::create(*f.model, EngineOptions{});
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  auto s = e.open_session();
  GenerateRequest r;
  r.prompt = {2, 40, 41, 3, 3, 50, 3};
  r.pooling = Pooling::kRank;
  auto h = e.submit(*s, r);
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  const StreamChunk c = final_chunk(e, *h);
  ASSERT_EQ(c.kind, ChunkKind::kDone);
  ASSERT_EQ(c.scores.size(), 1u);
  EXPECT_NEAR(c.scores[0], alone(*f.model, r.prompt, EncoderPooling::kRank)[0], 1e-5);
  EXPECT_TRUE(c.embedding.empty());

  GenerateRequest gen;  // generation
  gen.prompt = {2, 5, 3};
  auto g = e.submit(*s, gen);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("text encoder"), std::string::npos);
  GenerateRequest longer;  // past the 32 positions of the file
  longer.prompt.assign(33, 7);
  longer.pooling = Pooling::kMean;
  auto l = e.submit(*s, longer);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("33 tokens"), std::string::npos) << l.status().to_string();
  GenerateRequest bad_id;
  bad_id.prompt = {2, 300};
  bad_id.pooling = Pooling::kMean;
  EXPECT_FALSE(e.submit(*s, bad_id).ok());
  EXPECT_FALSE(e.next(RequestHandle{1, *s, 1}, 1ms).ok());  // a decoder engine's handle
}

TEST(EncoderEngine, RankNeedsAHeadCancelAndCloseEndRequests) {
  Fixture f("cancel", false);
  ASSERT_NE(f.model, nullptr);
  auto engine = Engine::create(*f.model, EngineOptions{});
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  auto s = e.open_session();
  GenerateRequest r;
  r.prompt = {2, 40, 3};
  r.pooling = Pooling::kRank;
  auto bad = e.submit(*s, r);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("classification head"), std::string::npos);
  r.pooling = Pooling::kMean;
  std::vector<RequestHandle> hs;
  for (int i = 0; i < 50; ++i) hs.push_back(*e.submit(*s, r));
  ASSERT_TRUE(e.cancel(hs.back()).ok());
  const StreamChunk c = final_chunk(e, hs.back());
  EXPECT_TRUE(c.kind == ChunkKind::kCancelled || c.kind == ChunkKind::kDone);
  EXPECT_TRUE(e.close_session(*s).ok());  // the rest end with the session
  EXPECT_FALSE(e.next(hs[0], 1ms).ok());
  EXPECT_TRUE(e.wait_for_stats([](const EngineStats& st) { return st.running == 0; }, 10s));
}

TEST(EncoderEngine, MemoryPlanCountsActivationsAndNoKv) {
  Fixture f("plan", false);
  auto fp = read_model_footprint(f.path);
  ASSERT_TRUE(fp.ok()) << fp.status().to_string();
  EXPECT_TRUE(fp->config.encoder_only);
  PlanOptions po;
  po.ctx = 32;
  po.max_seqs = 8;
  po.max_batched_tokens = 256;
  MemoryLimit unlimited;
  unlimited.bytes = int64_t{1} << 40;
  auto plan = make_memory_plan(*fp, po, unlimited);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->of(MemCategory::kKv), 0);
  EXPECT_EQ(plan->of(MemCategory::kRope), 0);
  EXPECT_EQ(plan->of(MemCategory::kScratch),
            bert_scratch_floats(fp->config, 256, 32) * static_cast<int64_t>(sizeof(float)));
  EXPECT_GT(plan->of(MemCategory::kWeights) + plan->of(MemCategory::kWeightsMapped), 0);
  EXPECT_TRUE(plan->admitted);
}

}  // namespace
}  // namespace edge
