// Real HF checkpoints vary in layout: Gemma-3 4B+ wrap the language model
// (Gemma3ForConditionalGeneration: config.json text_config listing only non-default
// fields, tensors under language_model.*), and large models are sharded. These must load to
// the same logits as the plain directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "formats/hf_config.h"
#include "formats/safetensors.h"
#include "model_test_util.h"

namespace edge {
namespace {

RandomModelOptions gemma_opts() {
  RandomModelOptions o;
  o.arch = "gemma3";
  o.n_layer = 3;
  o.sliding_pattern = 3;
  o.n_embd = 32;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.head_dim = 16;
  o.n_ff = 48;
  o.n_vocab = 420;
  o.sliding_window = 4;
  return o;
}

// Copies an HF dir's tensors under new names (and optionally sharded) into `dst`.
void rewrite_tensors(const std::string& src, const std::string& dst, const std::string& prefix,
                     uint64_t shard_bytes) {
  auto st = SafetensorsModel::open(src);
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  std::vector<TensorView> views;
  for (TensorView v : st->tensors().all()) {
    v.name = prefix + v.name;
    views.push_back(v);
  }
  std::filesystem::create_directories(dst);
  if (shard_bytes)
    ASSERT_TRUE(write_safetensors_sharded(dst, views, shard_bytes).ok());
  else
    ASSERT_TRUE(write_safetensors(dst + "/model.safetensors", views, {}).ok());
  std::filesystem::copy_file(src + "/tokenizer.json", dst + "/tokenizer.json");
}

TEST(HfLayouts, Gemma3MultimodalWrapperWithSparseTextConfig) {
  const std::string dir = testing::temp_dir("gemma_wrapper");
  ASSERT_TRUE(write_random_model(gemma_opts(), dir + "/plain").ok());
  rewrite_tensors(dir + "/plain", dir + "/wrapped", "language_model.", 0);
  auto cfg = read_json_file(dir + "/plain/config.json");
  ASSERT_TRUE(cfg.ok());
  nlohmann::json text = *cfg;
  // Fields equal to Gemma3TextConfig's defaults are left out, as real checkpoints do.
  for (const char* k : {"rms_norm_eps", "rope_local_base_freq", "rope_theta", "layer_types"})
    text.erase(k);
  text["sliding_window_pattern"] = 3;
  nlohmann::json wrapped = {{"architectures", {"Gemma3ForConditionalGeneration"}},
                            {"model_type", "gemma3"},
                            {"text_config", text},
                            {"vision_config", {{"hidden_size", 8}}}};
  std::ofstream(dir + "/wrapped/config.json") << wrapped.dump(2);

  auto a = testing::load_or_die(dir + "/plain");
  auto b = testing::load_or_die(dir + "/wrapped");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(describe_config(a->config()), describe_config(b->config()));
  EXPECT_EQ(b->config().norm_eps, 1e-6f);
  const auto toks = testing::test_tokens(9, 420, 2);
  EXPECT_LT(testing::rel_diff(testing::prefill_logits(*a, toks), testing::prefill_logits(*b, toks)), 1e-6);
}

TEST(HfLayouts, ShardedSafetensors) {
  const std::string dir = testing::temp_dir("sharded");
  RandomModelOptions o = gemma_opts();
  o.arch = "qwen3";
  ASSERT_TRUE(write_random_model(o, dir + "/plain").ok());
  rewrite_tensors(dir + "/plain", dir + "/sharded", "", 20000);
  std::filesystem::copy_file(dir + "/plain/config.json", dir + "/sharded/config.json");
  int shards = 0;
  for (auto& e : std::filesystem::directory_iterator(dir + "/sharded"))
    shards += e.path().extension() == ".safetensors";
  EXPECT_GT(shards, 2);
  auto a = testing::load_or_die(dir + "/plain");
  auto b = testing::load_or_die(dir + "/sharded");
  ASSERT_TRUE(a && b);
  const auto toks = testing::test_tokens(7, o.n_vocab, 4);
  EXPECT_EQ(testing::prefill_logits(*a, toks), testing::prefill_logits(*b, toks));
}

}  // namespace
}  // namespace edge
