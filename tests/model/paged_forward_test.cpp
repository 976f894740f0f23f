// The paged forward pass: a sliding-window ring against a full cache masked to the window,
// chunked prefill against one batch, several sequences in one step against each alone,
// and the reduced-precision KV element types against F32.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/forward.h"
#include "model/kv_layout.h"
#include "model_test_util.h"

namespace edge {
namespace {

using testing::load_or_die;
using testing::rel_diff;
using testing::temp_dir;
using testing::test_tokens;

// Spark-style: 4 layers, 3 sliding (window 8) + 1 global.
std::unique_ptr<Model> spark_model(const std::string& dir) {
  RandomModelOptions o;
  o.arch = "spark";
  o.n_layer = 4;
  o.n_embd = 64;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_vocab = 512;
  o.sliding_window = 8;
  const std::string path = dir + "/spark.gguf";
  EXPECT_TRUE(write_random_model(o, path).ok());
  return load_or_die(path);
}

// Logits of every token, fed `chunk` tokens at a time.
std::vector<float> run_all(const Model& m, const std::vector<int32_t>& toks, const InferenceOptions& o,
                           int64_t chunk) {
  auto st = InferenceState::create(m, static_cast<int64_t>(toks.size()), o);
  EXPECT_TRUE(st.ok()) << st.status().to_string();
  std::vector<float> out;
  for (size_t i = 0; i < toks.size(); i += static_cast<size_t>(chunk)) {
    const size_t n = std::min(toks.size() - i, static_cast<size_t>(chunk));
    auto r = st->forward(std::span<const int32_t>(toks).subspan(i, n), true);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    if (r.ok()) out.insert(out.end(), r->begin(), r->end());
  }
  return out;
}

TEST(SlidingWindowCache, RingMatchesMaskedFullCache) {
  // Past the window, a ring that keeps only the window's blocks must give the same logits
  // as a full cache with everything older than the window masked.
  const std::string dir = temp_dir("ring");
  auto m = spark_model(dir);
  ASSERT_TRUE(m);
  const auto toks = test_tokens(70, 512, 3);  // 70 > window 8, several ring turns
  InferenceOptions ring, full;
  ring.max_step = 5;  // a small ring: ceil((8 + 5 - 1) / 16) + 1 = 2 blocks
  full.max_step = 5;
  full.sliding_ring = false;
  for (int64_t chunk : {1, 5, 3}) {
    const auto a = run_all(*m, toks, ring, chunk);
    const auto b = run_all(*m, toks, full, chunk);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_LT(rel_diff(a, b), 1e-4) << "chunk " << chunk;
  }
  auto st = InferenceState::create(*m, 4096, ring);
  ASSERT_TRUE(st.ok());
  auto st_full = InferenceState::create(*m, 4096, full);
  ASSERT_TRUE(st_full.ok());
  // Only the global layer pays for the context: 1 of 4 layers x 256 blocks vs 3 x 2.
  EXPECT_LT(st->kv_cache_bytes() * 3, st_full->kv_cache_bytes());
}

TEST(SlidingWindowCache, TruncateRefusesPositionsTheRingDropped) {
  auto m = spark_model(temp_dir("trunc"));
  ASSERT_TRUE(m);
  InferenceOptions o;
  o.max_step = 4;
  auto st = InferenceState::create(*m, 128, o);
  ASSERT_TRUE(st.ok());
  const auto toks = test_tokens(60, 512, 5);
  ASSERT_TRUE(st->forward(toks).ok());
  EXPECT_TRUE(st->truncate(58).ok());
  EXPECT_FALSE(st->truncate(3).ok());
}

TEST(PagedForward, ChunkedPrefillEqualsOneBatch) {
  auto m = load_or_die([] {
    const std::string p = temp_dir("chunk") + "/llama.gguf";
    RandomModelOptions o;
    EXPECT_TRUE(write_random_model(o, p).ok());
    return p;
  }());
  ASSERT_TRUE(m);
  const auto toks = test_tokens(40, 512, 9);
  InferenceOptions big, small;
  small.max_step = 7;
  const auto a = run_all(*m, toks, big, 40);
  const auto b = run_all(*m, toks, small, 40);
  EXPECT_LT(rel_diff(a, b), 1e-5);
}

TEST(PagedForward, SequencesInOneStepEqualEachAlone) {
  auto m = spark_model(temp_dir("multi"));
  ASSERT_TRUE(m);
  const KvLayout layout = KvLayout::make(m->config(), KvSettings{KvType::kF16, 16});
  // Three sequences, each with its own blocks of one shared storage.
  auto kv = KvStorage::create(layout, {12, 12});
  ASSERT_TRUE(kv.ok());
  auto pass = ForwardPass::create(*m, 64);
  ASSERT_TRUE(pass.ok());
  const std::vector<std::vector<int32_t>> prompts = {test_tokens(20, 512, 1), test_tokens(3, 512, 2),
                                                     test_tokens(33, 512, 4)};
  std::vector<std::vector<int32_t>> tables[2];
  for (int g = 0; g < 2; ++g)
    for (int s = 0; s < 3; ++s) tables[g].push_back({s * 4 + 0, s * 4 + 1, s * 4 + 2, s * 4 + 3});
  std::vector<int32_t> step_tokens;
  std::vector<SeqStep> steps;
  for (int s = 0; s < 3; ++s) {
    step_tokens.insert(step_tokens.end(), prompts[s].begin(), prompts[s].end());
    SeqStep st;
    st.n_tokens = static_cast<int64_t>(prompts[s].size());
    st.blocks[0] = tables[0][s];
    st.blocks[1] = tables[1][s];
    steps.push_back(st);
  }
  auto logits = pass->run(step_tokens, steps, *kv);
  ASSERT_TRUE(logits.ok()) << logits.status().to_string();
  const std::vector<float> batched(logits->begin(), logits->end());
  InferenceOptions o;
  o.kv_types = KvType::kF16;
  o.sliding_ring = false;
  const int32_t nv = m->config().n_vocab;
  for (int s = 0; s < 3; ++s) {
    auto st = InferenceState::create(*m, 64, o);
    ASSERT_TRUE(st.ok());
    auto r = st->forward(prompts[s]);
    ASSERT_TRUE(r.ok());
    EXPECT_LT(rel_diff(std::span<const float>(batched).subspan(s * nv, nv), *r), 1e-4) << "sequence " << s;
  }
  // A decode step for all three at once continues each sequence.
  for (auto& st : steps) {
    st.pos0 = st.n_tokens;
    st.n_tokens = 1;
  }
  const std::vector<int32_t> next = {5, 6, 7};
  auto dec = pass->run(next, steps, *kv);
  ASSERT_TRUE(dec.ok()) << dec.status().to_string();
  for (int s = 0; s < 3; ++s) {
    auto st = InferenceState::create(*m, 64, o);
    ASSERT_TRUE(st.ok());
    std::vector<int32_t> all = prompts[s];
    all.push_back(next[s]);
    auto r = st->forward(all);
    ASSERT_TRUE(r.ok());
    EXPECT_LT(rel_diff(dec->subspan(s * nv, nv), *r), 1e-4) << "decode sequence " << s;
  }
}

TEST(PagedForward, ReducedPrecisionKvStaysCloseToF32) {
  auto m = spark_model(temp_dir("types"));
  ASSERT_TRUE(m);
  const auto toks = test_tokens(30, 512, 11);
  InferenceOptions f32;
  const auto ref = run_all(*m, toks, f32, 30);
  for (auto [t, bound] : {std::pair{KvTypes(KvType::kF16), 5e-3},
                          {KvType::kBF16, 3e-2},
                          {KvType::kQ8, 5e-2},
                          {KvTypes(KvType::kQ4, KvType::kF16), 0.15},
                          {KvTypes(KvType::kF16, KvType::kQ4), 0.15},
                          {KvType::kQ4, 0.2}}) {
    InferenceOptions o;
    o.kv_types = t;
    const auto got = run_all(*m, toks, o, 30);
    const double d = rel_diff(got, ref);
    std::printf("kv %s: relative logit difference %.4f\n", kv_types_name(t).c_str(), d);
    EXPECT_LT(d, bound) << kv_types_name(t);
    EXPECT_GT(d, 0.0) << kv_types_name(t) << ": the type did not take effect";
  }
}

TEST(PagedForward, BadStepsAreRefused) {
  auto m = spark_model(temp_dir("bad"));
  ASSERT_TRUE(m);
  const KvLayout layout = KvLayout::make(m->config(), KvSettings{});
  auto kv = KvStorage::create(layout, {2, 2});
  ASSERT_TRUE(kv.ok());
  auto pass = ForwardPass::create(*m, 8);
  ASSERT_TRUE(pass.ok());
  std::vector<int32_t> table = {0};
  SeqStep s;
  s.n_tokens = 3;
  s.blocks[0] = table;
  s.blocks[1] = table;
  const std::vector<int32_t> toks = {1, 2, 3};
  EXPECT_TRUE(pass->run(toks, {&s, 1}, *kv).ok());
  s.pos0 = 15;  // positions 15..17 need 2 blocks, the table has 1
  EXPECT_FALSE(pass->run(toks, {&s, 1}, *kv).ok());
  s.pos0 = 0;
  s.n_tokens = 2;  // slices do not cover the tokens
  EXPECT_FALSE(pass->run(toks, {&s, 1}, *kv).ok());
  const std::vector<int32_t> nine(9, 1);
  s.n_tokens = 9;
  EXPECT_FALSE(pass->run(nine, {&s, 1}, *kv).ok());  // over max_tokens
}

}  // namespace
}  // namespace edge
