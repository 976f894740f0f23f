// GPT-OSS from a Hugging Face directory: the fused expert tensors (float, [in, out], gate and
// up interleaved; or the release's MXFP4 blocks and scales) load as the GGUF file of the same
// weights, logit for logit; the config's YaRN "truncate": false is honoured; a checkpoint
// missing a piece is refused by name.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "convert/random_model.h"
#include "formats/safetensors.h"
#include "model/model_footprint.h"
#include "quant/packed.h"
#include "model_test_util.h"

namespace edge {
namespace {

using testing::load_or_die;
using testing::read_json;
using testing::write_json;
using testing::prefill_logits;
using testing::rel_diff;
using testing::temp_dir;
using testing::test_tokens;

RandomModelOptions small_gpt_oss() {
  RandomModelOptions o;
  o.arch = "gpt-oss";
  o.n_layer = 2;
  o.n_embd = 64;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.head_dim = 16;
  o.n_ff = 32;  // GPT-OSS's intermediate_size is the experts' FFN
  o.n_expert = 4;
  o.n_expert_used = 2;
  o.n_ff_expert = 32;
  o.n_vocab = 600;
  o.ctx = 64;
  o.seed = 9;
  return o;
}


// The HF directory with config.json's rope_scaling.truncate set to `truncate`.
void set_truncate(const std::string& dir, bool truncate) {
  nlohmann::json j = read_json(dir + "/config.json");
  ASSERT_TRUE(j.contains("rope_scaling"));
  j["rope_scaling"]["truncate"] = truncate;
  write_json(dir + "/config.json", j);
}

// GGUF and HF of the same options: the HF form's tensors are the fused ones, and with YaRN's
// truncation as llama.cpp has it the two load as the same model (to float rounding).
void expect_same_model(RandomModelOptions o, const std::string& dir, double tolerance) {
  ASSERT_TRUE(write_random_model(o, dir + "/m.gguf").ok());
  Status st = write_random_model(o, dir + "/hf");
  ASSERT_TRUE(st.ok()) << st.to_string();
  auto st_model = SafetensorsModel::open(dir + "/hf");
  ASSERT_TRUE(st_model.ok());
  const TensorSet& t = st_model->tensors();
  const std::string e = "model.layers.1.mlp.experts.";
  if (o.experts_dtype == DType::MXFP4) {
    const TensorView* b = t.find(e + "gate_up_proj_blocks");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->dtype, DType::U8);
    EXPECT_EQ(b->shape, (std::vector<int64_t>{4, 64, 2, 16}));  // [E, 2 n_ff, n_embd / 32, 16]
    ASSERT_NE(t.find(e + "down_proj_scales"), nullptr);
    EXPECT_EQ(t.find(e + "down_proj_scales")->shape, (std::vector<int64_t>{4, 64, 1}));
  } else {
    ASSERT_NE(t.find(e + "gate_up_proj"), nullptr);
    EXPECT_EQ(t.find(e + "gate_up_proj")->shape, (std::vector<int64_t>{4, 64, 64}));  // [E, D, 2F]
    EXPECT_EQ(t.find(e + "down_proj")->shape, (std::vector<int64_t>{4, 32, 64}));     // [E, F, D]
  }
  EXPECT_EQ(t.find(e + "gate_up_proj_bias")->shape, (std::vector<int64_t>{4, 64}));
  ASSERT_NE(t.find("model.layers.0.self_attn.sinks"), nullptr);
  ASSERT_NE(t.find("model.layers.0.mlp.router.bias"), nullptr);
  EXPECT_EQ(read_json(dir + "/hf/config.json")["rope_scaling"]["truncate"], false);

  auto g = load_or_die(dir + "/m.gguf");
  auto h_hf = load_or_die(dir + "/hf");
  ASSERT_TRUE(g && h_hf);
  const std::vector<int32_t> toks = test_tokens(12, o.n_vocab, 4);
  const std::vector<float> lg = prefill_logits(*g, toks);
  // HF's YaRN without truncation moves the correction range's ends off whole pairs: close to
  // the GGUF model (llama.cpp rounds them), not the same.
  const double untruncated = rel_diff(lg, prefill_logits(*h_hf, toks));
  EXPECT_GT(untruncated, tolerance);
  EXPECT_LT(untruncated, 0.05);
  set_truncate(dir + "/hf", true);
  auto h = load_or_die(dir + "/hf");
  ASSERT_TRUE(h);
  EXPECT_EQ(describe_config(g->config()), describe_config(h->config()));
  EXPECT_EQ(g->config().layers[0].sliding, true);
  EXPECT_EQ(h->config().layers[1].sliding, false);
  EXPECT_LT(rel_diff(lg, prefill_logits(*h, toks)), tolerance);
  // The memory plan counts the fused experts as the loader holds them: anonymous bytes.
  auto fp = read_model_footprint(dir + "/hf");
  ASSERT_TRUE(fp.ok());
  EXPECT_GT(fp->experts_anon, 0u);
  EXPECT_EQ(fp->experts_mapped, 0u);
}

TEST(GptOssHf, FloatCheckpointLoadsAsItsGguf) {
  expect_same_model(small_gpt_oss(), temp_dir("gpt_oss_hf_f32"), 1e-5);
}

TEST(GptOssHf, Mxfp4CheckpointLoadsAsItsGgufWithoutAFloatStep) {
  RandomModelOptions o = small_gpt_oss();
  o.experts_dtype = DType::MXFP4;
  const std::string dir = temp_dir("gpt_oss_hf_mxfp4");
  expect_same_model(o, dir, 1e-5);
  // The experts are packed MXFP4 cells built from the blocks, with int8 activations.
  auto h = load_or_die(dir + "/hf");
  ASSERT_TRUE(h);
  const LayerWeights& l = h->weights().layers[0];
  ASSERT_EQ(l.gate_exps.size(), 4u);
  EXPECT_TRUE(is_packed_dtype(l.gate_exps[0].dtype));
  EXPECT_TRUE(is_packed_dtype(l.down_exps[3].dtype));
}

// A checkpoint rewritten without one of its tensors.
std::string without(const std::string& dir, const std::string& name, const std::string& out) {
  std::filesystem::create_directories(out);
  for (const char* f : {"config.json", "tokenizer.json", "tokenizer_config.json"})
    std::filesystem::copy_file(dir + "/" + f, out + "/" + f,
                               std::filesystem::copy_options::overwrite_existing);
  auto m = SafetensorsModel::open(dir);
  std::vector<TensorView> keep;
  for (const TensorView& t : m->tensors().all())
    if (t.name != name) keep.push_back(t);
  EXPECT_TRUE(write_safetensors(out + "/model.safetensors", keep, {{"format", "pt"}}).ok());
  return out;
}

TEST(GptOssHf, IncompleteExpertsAreRefusedByName) {
  const std::string dir = temp_dir("gpt_oss_hf_bad");
  RandomModelOptions o = small_gpt_oss();
  o.experts_dtype = DType::MXFP4;
  ASSERT_TRUE(write_random_model(o, dir + "/hf").ok());
  const std::string e = "model.layers.1.mlp.experts.";
  struct Case {
    std::string drop, says;
  };
  for (const Case& c : {Case{e + "gate_up_proj_scales", "gate_up_proj_scales"},
                        Case{e + "down_proj_bias", "down_proj_bias"},
                        Case{"model.layers.1.self_attn.sinks", "attn_sinks"}}) {
    const std::string bad = without(dir + "/hf", c.drop, dir + "/bad");
    auto m = Model::load(bad, LoadOptions{});
    ASSERT_FALSE(m.ok()) << c.drop;
    EXPECT_NE(m.status().message().find(c.says), std::string::npos) << m.status().to_string();
  }
  // Both expert forms gone: the layer says what it expected.
  std::string bad = without(dir + "/hf", e + "gate_up_proj_blocks", dir + "/bad2");
  bad = without(bad, e + "gate_up_proj_scales", dir + "/bad3");
  auto m = Model::load(bad, LoadOptions{});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("layer 1 has no experts"), std::string::npos)
      << m.status().to_string();
}

}  // namespace
}  // namespace edge
