// The real llama2.c "stories260K" checkpoint against llama2.c's own fp32 outputs
// (tests/data/stories260K/greedy_*.json): greedy decoding from `prompt` must reproduce
// `greedy` exactly, and the logits at the first generated position must match
// `first_logits` within 1e-4.
//
// Convention (worked out from the files): llama2.c runs `steps` positions counting the
// prompt, so len(greedy) = steps - (len(prompt) - 1); a generated BOS (id 1) does not stop
// the sequence. We therefore feed the prompt, then generate len(greedy) tokens, feeding
// each back except the last.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "model/forward.h"
#include "model/model.h"

namespace edge {
namespace {

const std::string kDir = std::string(EDGE_TEST_DATA) + "/stories260K";

int32_t argmax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

struct Reference {
  std::vector<int32_t> prompt, greedy;
  std::vector<float> first_logits;
};

Reference read_reference(const std::string& name) {
  std::ifstream f(kDir + "/" + name);
  nlohmann::json j = nlohmann::json::parse(f);
  return {j["prompt"].get<std::vector<int32_t>>(), j["greedy"].get<std::vector<int32_t>>(),
          j["first_logits"].get<std::vector<float>>()};
}

class Stories260K : public ::testing::TestWithParam<std::tuple<const char*, bool, int>> {};

// Params: reference file, prompt as one batch (else token by token), threads.
TEST_P(Stories260K, GreedyAndFirstLogitsMatchLlama2c) {
  auto [file, batched, threads] = GetParam();
  Reference ref = read_reference(file);
  LoadOptions opt;
  opt.n_threads = threads;
  auto model = Model::load(kDir + "/stories260K.bin", opt);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const ModelConfig& c = (*model)->config();
  ASSERT_EQ(c.n_vocab, 512);
  ASSERT_EQ(c.n_layer, 5);
  ASSERT_EQ(c.n_head_kv, 4);
  auto st = InferenceState::create(**model, c.max_ctx);
  ASSERT_TRUE(st.ok());

  std::span<const float> logits;
  if (batched) {
    auto r = st->forward(ref.prompt);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    logits = *r;
  } else {
    for (int32_t t : ref.prompt) {
      auto r = st->forward(std::span<const int32_t>(&t, 1));
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      logits = *r;
    }
  }
  ASSERT_EQ(logits.size(), ref.first_logits.size());
  float worst = 0;
  for (size_t i = 0; i < logits.size(); ++i) worst = std::max(worst, std::abs(logits[i] - ref.first_logits[i]));
  EXPECT_LT(worst, 1e-4f);

  std::vector<int32_t> out;
  for (size_t i = 0; i < ref.greedy.size(); ++i) {
    int32_t next = argmax(logits);
    out.push_back(next);
    if (i + 1 == ref.greedy.size()) break;
    auto r = st->forward(std::span<const int32_t>(&next, 1));
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    logits = *r;
  }
  EXPECT_EQ(out, ref.greedy);
}

INSTANTIATE_TEST_SUITE_P(
    Files, Stories260K,
    ::testing::Values(std::make_tuple("greedy_bos.json", false, 1),
                      std::make_tuple("greedy_p1.json", false, 2),
                      std::make_tuple("greedy_p1.json", true, 3),
                      std::make_tuple("greedy_p2.json", true, 1),
                      std::make_tuple("greedy_p2.json", false, 4)));

}  // namespace
}  // namespace edge
