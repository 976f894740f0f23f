// Conformance of the hybrid linear-attention families (Qwen3.5, Qwen3.5-MoE and Qwen3-Next:
// Gated DeltaNet layers and gated softmax attention; the MoE ones with routed experts and a
// gated shared expert; Qwen3-Next with fused projections) with ik_llama.cpp, on the tiny random models made by
// tests/data/hybrid/make_models.sh (our make-model, fixed seed): the logits of every
// position of a 150-token prompt and 16 greedy tokens, against the numbers ik_llama.cpp
// produced on the same file (tests/data/moe/make_reference.cpp with PROMPT_LEN 150; the
// command is in tests/data/hybrid/README.md). The prompt spans three of the chunk-wise
// prefill's 64-token chunks; the same rows are checked when the prompt runs in steps of 48
// tokens (the state carried between steps) and token by token (the decode recurrence).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "e2e/conformance_data.h"
#include "model/forward.h"
#include "model/model.h"

namespace edge::e2e {
namespace {

const std::string kData = std::string(EDGE_SOURCE_DIR) + "/tests/data/hybrid/";

const std::string& models() {
  static const std::string dir = make_conformance_models(kData, "hybrid_models");
  return dir;
}

struct Reference {
  std::vector<int32_t> prompt, greedy;
  int64_t n_vocab = 0;
  std::vector<float> logits;  // [prompt, n_vocab]
};

Reference load_reference(const std::string& name) {
  Reference r;
  std::ifstream jf(kData + name + ".json");
  EXPECT_TRUE(jf.good()) << kData + name + ".json";
  if (!jf.good()) return r;
  const nlohmann::json j = nlohmann::json::parse(jf);
  r.prompt = j["prompt"].get<std::vector<int32_t>>();
  r.greedy = j["greedy"].get<std::vector<int32_t>>();
  r.n_vocab = j["n_vocab"].get<int64_t>();
  r.logits = read_f32(kData + name + ".logits.f32");
  return r;
}

// Largest |ours - theirs| of a row over the row's largest |theirs|, worst over the rows.
double worst_row_error(std::span<const float> got, const std::vector<float>& want, int64_t V) {
  double worst = 0;
  for (size_t p = 0; p * V < want.size(); ++p) {
    double err = 0, scale = 1e-6;
    for (int64_t v = 0; v < V; ++v) {
      const double a = got[p * V + v], b = want[p * V + v];
      err = std::max(err, std::fabs(a - b));
      scale = std::max(scale, std::fabs(b));
    }
    worst = std::max(worst, err / scale);
  }
  return worst;
}

std::unique_ptr<Model> load(const std::string& name) {
  LoadOptions lo;
  lo.n_threads = 2;
  auto m = Model::load(models() + "/" + name + ".gguf", lo);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? std::move(*m) : nullptr;
}

// ik_llama.cpp keeps the attention layers' KV in F16 (ours: F32 here) and runs its own
// chunked delta rule; a wrong head map, gate or conv state moves rows by far more.
constexpr double kTolerance = 2e-3;

class HybridConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(HybridConformance, PromptLogitsMatchIkLlamaCppInOneStepAndInSteps) {
  const Reference ref = load_reference(GetParam());
  ASSERT_FALSE(ref.prompt.empty());
  auto m = load(GetParam());
  ASSERT_TRUE(m);
  ASSERT_EQ(m->config().n_vocab, ref.n_vocab);
  ASSERT_EQ(m->config().n_recurrent_layers(), m->config().n_layer * 3 / 4);
  for (int64_t step : {512, 48}) {
    InferenceOptions o;
    o.max_step = step;
    auto st = InferenceState::create(*m, 256, o);
    ASSERT_TRUE(st.ok());
    auto all = st->forward(ref.prompt, true);
    ASSERT_TRUE(all.ok()) << all.status().to_string();
    const double err = worst_row_error(*all, ref.logits, ref.n_vocab);
    std::printf("steps of %lld: worst row error %.3g\n", static_cast<long long>(step), err);
    EXPECT_LT(err, kTolerance) << "steps of " << step;
  }
}

TEST_P(HybridConformance, TokenByTokenAndGreedyMatchIkLlamaCpp) {
  const Reference ref = load_reference(GetParam());
  ASSERT_FALSE(ref.prompt.empty());
  auto m = load(GetParam());
  ASSERT_TRUE(m);
  const int64_t V = ref.n_vocab;
  auto st = InferenceState::create(*m, 256);
  ASSERT_TRUE(st.ok());
  std::vector<float> rows;
  for (int32_t t : ref.prompt) {
    auto r = st->forward(std::span<const int32_t>(&t, 1));
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    rows.insert(rows.end(), r->begin(), r->end());
  }
  const double err = worst_row_error(rows, ref.logits, V);
  std::printf("token by token: worst row error %.3g\n", err);
  EXPECT_LT(err, kTolerance);
  std::vector<float> last(rows.end() - V, rows.end());
  std::vector<int32_t> got;
  for (size_t s = 0; s < ref.greedy.size(); ++s) {
    got.push_back(static_cast<int32_t>(std::max_element(last.begin(), last.end()) - last.begin()));
    auto r = st->forward(std::span<const int32_t>(&got.back(), 1));
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    last.assign(r->begin(), r->end());
  }
  EXPECT_EQ(got, ref.greedy);
}

TEST_P(HybridConformance, StateCannotRollBackButRestartsAtZero) {
  const Reference ref = load_reference(GetParam());
  ASSERT_FALSE(ref.prompt.empty());
  auto m = load(GetParam());
  ASSERT_TRUE(m);
  auto st = InferenceState::create(*m, 256);
  ASSERT_TRUE(st.ok());
  const std::span<const int32_t> p(ref.prompt.data(), 40);
  auto first = st->forward(p, false);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  const Status back = st->truncate(20);
  EXPECT_FALSE(back.ok());
  EXPECT_NE(back.message().find("recurrent"), std::string::npos) << back.to_string();
  // A restart at 0 zeroes the state: the same prompt gives ik's rows again.
  ASSERT_TRUE(st->truncate(0).ok());
  auto again = st->forward(ref.prompt, true);
  ASSERT_TRUE(again.ok());
  EXPECT_LT(worst_row_error(*again, ref.logits, ref.n_vocab), kTolerance);
}

INSTANTIATE_TEST_SUITE_P(Families, HybridConformance, ::testing::Values("qwen35", "qwen35moe", "qwen3next"));

}  // namespace
}  // namespace edge::e2e
