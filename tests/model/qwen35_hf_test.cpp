// Qwen3.5 from a Hugging Face directory (model/arch/qwen35_hf.h): the checkpoint make-model
// writes in HF's conventions (A_log, conv1d [C, 1, K], value heads grouped, norms as w, fused
// experts) loads as the GGUF file of the same weights, logit for logit, over a prompt that
// spans several prefill chunks; the per-expert form and the multimodal wrapper's names load
// the same; a broken checkpoint is refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "convert/quantize_hf.h"
#include "convert/random_model.h"
#include "formats/safetensors.h"
#include "model/model_footprint.h"
#include "model_test_util.h"

namespace edge {
namespace {

using testing::load_or_die;
using testing::prefill_logits;
using testing::read_json;
using testing::rel_diff;
using testing::temp_dir;
using testing::test_tokens;
using testing::write_json;

RandomModelOptions small(const std::string& arch) {
  RandomModelOptions o;
  o.arch = arch;
  o.n_layer = 4;  // three Gated DeltaNet layers, then gated attention
  o.n_embd = 64;
  o.n_head = 4;  // 4 value heads over 2 key heads: grouped and tiled orders differ
  o.n_head_kv = 2;
  o.head_dim = 32;
  o.n_vocab = 512;
  o.seed = 11;
  if (arch == "qwen35moe") {
    o.n_expert = 4;
    o.n_expert_used = 2;
    o.n_ff_expert = 48;
  }
  return o;
}

// `dir`'s checkpoint rewritten into `out`: each tensor through `rewrite` (none, one or more
// tensors back), config.json through `config`.
template <typename R, typename C>
std::string rewritten(const std::string& dir, const std::string& out, R rewrite, C config) {
  std::filesystem::create_directories(out);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    std::filesystem::copy_file(dir + "/" + f, out + "/" + f,
                               std::filesystem::copy_options::overwrite_existing);
  nlohmann::json j = read_json(dir + "/config.json");
  config(&j);
  write_json(out + "/config.json", j);
  auto m = SafetensorsModel::open(dir);
  EXPECT_TRUE(m.ok());
  std::vector<std::vector<uint8_t>> keep_alive;
  keep_alive.reserve(1024);
  std::vector<TensorView> views;
  for (const TensorView& t : m->tensors().all()) rewrite(t, &views, &keep_alive);
  EXPECT_TRUE(write_safetensors(out + "/model.safetensors", views, {{"format", "pt"}}).ok());
  return out;
}

void same(const TensorView& t, std::vector<TensorView>* out, std::vector<std::vector<uint8_t>>*) {
  out->push_back(t);
}
void no_config_change(nlohmann::json*) {}

// The GGUF file and the HF directory of the same options give the same logits over 150
// tokens (three 64-token prefill chunks).
void expect_same_model(const std::string& gguf, const std::string& hf, int32_t n_vocab) {
  auto g = load_or_die(gguf);
  auto h = load_or_die(hf);
  ASSERT_TRUE(g && h);
  EXPECT_EQ(h->config().linear.head_map, DeltaNetHeadMap::kGrouped);
  EXPECT_EQ(g->config().linear.head_map, DeltaNetHeadMap::kTiled);
  EXPECT_EQ(h->config().layers[0].rotary_dim, g->config().layers[0].rotary_dim);
  const std::vector<int32_t> toks = test_tokens(150, n_vocab, 3);
  EXPECT_LT(rel_diff(prefill_logits(*g, toks), prefill_logits(*h, toks)), 1e-5);
  EXPECT_EQ(testing::greedy(*g, toks, 6), testing::greedy(*h, toks, 6));
}

TEST(Qwen35Hf, DenseCheckpointLoadsAsItsGguf) {
  const std::string dir = temp_dir("qwen35_hf_dense");
  const RandomModelOptions o = small("qwen35");
  ASSERT_TRUE(write_random_model(o, dir + "/m.gguf").ok());
  Status st = write_random_model(o, dir + "/hf");
  ASSERT_TRUE(st.ok()) << st.to_string();
  auto sm = SafetensorsModel::open(dir + "/hf");
  ASSERT_TRUE(sm.ok());
  const std::string la = "model.layers.0.linear_attn.";
  ASSERT_NE(sm->tensors().find(la + "A_log"), nullptr);
  EXPECT_EQ(sm->tensors().find(la + "conv1d.weight")->shape, (std::vector<int64_t>{256, 1, 4}));
  ASSERT_NE(sm->tensors().find(la + "dt_bias"), nullptr);
  ASSERT_NE(sm->tensors().find("model.layers.3.self_attn.q_norm.weight"), nullptr);
  const nlohmann::json cfg = read_json(dir + "/hf/config.json");
  EXPECT_EQ(cfg["layer_types"][3], "full_attention");
  EXPECT_EQ(cfg["rope_parameters"]["partial_rotary_factor"], 0.25);
  expect_same_model(dir + "/m.gguf", dir + "/hf", o.n_vocab);
  // The plan counts the derived tensors (ssm_a, conv1d) as the loader holds them.
  auto fp = read_model_footprint(dir + "/hf");
  ASSERT_TRUE(fp.ok()) << fp.status().to_string();
}

TEST(Qwen35Hf, MultimodalWrapperNamesLoadTheTextModel) {
  const std::string dir = temp_dir("qwen35_hf_wrapper");
  const RandomModelOptions o = small("qwen35");
  ASSERT_TRUE(write_random_model(o, dir + "/m.gguf").ok());
  ASSERT_TRUE(write_random_model(o, dir + "/hf").ok());
  // Qwen3_5ForConditionalGeneration: model.language_model.*, the text fields in text_config,
  // the M-RoPE sections in the older rope_scaling form, and vision tensors to ignore.
  std::vector<float> vision(16, 0.5f);
  const std::string wrapped = rewritten(
      dir + "/hf", dir + "/wrapped",
      [&](const TensorView& t, std::vector<TensorView>* out, std::vector<std::vector<uint8_t>>*) {
        TensorView v = t;
        if (v.name.rfind("model.", 0) == 0) v.name = "model.language_model." + v.name.substr(6);
        out->push_back(v);
        if (t.name == "lm_head.weight")
          out->push_back(TensorView{"model.visual.merger.norm.weight",
                                    DType::F32,
                                    {16},
                                    reinterpret_cast<const uint8_t*>(vision.data()),
                                    64});
      },
      [](nlohmann::json* j) {
        nlohmann::json text = *j;
        const nlohmann::json rope = text["rope_parameters"];
        text.erase("rope_parameters");
        text["rope_theta"] = rope["rope_theta"];
        text["partial_rotary_factor"] = rope["partial_rotary_factor"];
        text["rope_scaling"] = {{"type", "default"}, {"mrope_section", rope["mrope_section"]}};
        *j = {{"architectures", {"Qwen3_5ForConditionalGeneration"}},
              {"model_type", "qwen3_5"},
              {"text_config", text},
              {"vision_config", {{"depth", 2}}}};
      });
  expect_same_model(dir + "/m.gguf", wrapped, o.n_vocab);
}

TEST(Qwen35Hf, MoeCheckpointFusedOrPerExpertLoadsAsItsGguf) {
  const std::string dir = temp_dir("qwen35_hf_moe");
  const RandomModelOptions o = small("qwen35moe");
  ASSERT_TRUE(write_random_model(o, dir + "/m.gguf").ok());
  ASSERT_TRUE(write_random_model(o, dir + "/hf").ok());
  auto sm = SafetensorsModel::open(dir + "/hf");
  ASSERT_TRUE(sm.ok());
  const TensorView* gu = sm->tensors().find("model.layers.1.mlp.experts.gate_up_proj");
  ASSERT_NE(gu, nullptr);
  EXPECT_EQ(gu->shape, (std::vector<int64_t>{4, 96, 64}));  // [E, 2F, D]
  EXPECT_EQ(sm->tensors().find("model.layers.1.mlp.shared_expert_gate.weight")->shape,
            (std::vector<int64_t>{1, 64}));
  expect_same_model(dir + "/m.gguf", dir + "/hf", o.n_vocab);

  // One tensor per expert (mlp.experts.E.{gate,up,down}_proj.weight) instead.
  const std::string split = rewritten(
      dir + "/hf", dir + "/split",
      [](const TensorView& t, std::vector<TensorView>* out, std::vector<std::vector<uint8_t>>*) {
        const size_t at = t.name.find("mlp.experts.");
        if (at == std::string::npos) return out->push_back(t);
        const std::string prefix = t.name.substr(0, at + 12);
        const bool fused = t.name.ends_with("gate_up_proj");
        const int64_t E = t.shape[0], rows = t.shape[1], cols = t.shape[2], es = 4;
        for (int64_t e = 0; e < E; ++e) {
          const uint8_t* base = t.data + e * rows * cols * es;
          const std::string x = prefix + std::to_string(e) + ".";
          if (fused) {
            const int64_t half = rows / 2 * cols * es;
            out->push_back(TensorView{
                x + "gate_proj.weight", t.dtype, {rows / 2, cols}, base, uint64_t(half)});
            out->push_back(TensorView{
                x + "up_proj.weight", t.dtype, {rows / 2, cols}, base + half, uint64_t(half)});
          } else {
            out->push_back(TensorView{
                x + "down_proj.weight", t.dtype, {rows, cols}, base, uint64_t(rows * cols * es)});
          }
        }
      },
      no_config_change);
  expect_same_model(dir + "/m.gguf", split, o.n_vocab);
}

// A broken checkpoint: the load fails with a message naming what is wrong.
TEST(Qwen35Hf, BrokenCheckpointsAreRefusedByName) {
  const std::string dir = temp_dir("qwen35_hf_bad");
  ASSERT_TRUE(write_random_model(small("qwen35"), dir + "/hf").ok());
  const std::string a_log = "model.layers.1.linear_attn.A_log";
  struct Case {
    std::string name;
    std::function<void(const TensorView&, std::vector<TensorView>*,
                       std::vector<std::vector<uint8_t>>*)>
        rewrite;
    std::function<void(nlohmann::json*)> config;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"no_a_log",
       [&](const TensorView& t, std::vector<TensorView>* out, std::vector<std::vector<uint8_t>>*) {
         if (t.name != a_log) out->push_back(t);
       },
       no_config_change, "blk.1.ssm_a"},
      {"conv_not_depthwise",
       [](const TensorView& t, std::vector<TensorView>* out, std::vector<std::vector<uint8_t>>*) {
         TensorView v = t;
         if (t.name == "model.layers.0.linear_attn.conv1d.weight") v.shape = {128, 2, 4};
         out->push_back(v);
       },
       no_config_change, "conv1d.weight"},
      {"short_layer_types", same, [](nlohmann::json* j) { (*j)["layer_types"].erase(0); },
       "layer_types"},
      {"odd_heads", same, [](nlohmann::json* j) { (*j)["linear_num_key_heads"] = 3; },
       "linear_num_key_heads"},
  };
  for (const Case& c : cases) {
    const std::string bad = rewritten(dir + "/hf", dir + "/" + c.name, c.rewrite, c.config);
    auto m = Model::load(bad, LoadOptions{});
    ASSERT_FALSE(m.ok()) << c.name;
    EXPECT_NE(m.status().message().find(c.says), std::string::npos)
        << c.name << ": " << m.status().to_string();
  }
  // quantize cannot write these tensors back in GGUF's form yet, and says so.
  const Status q = quantize_hf_dir(dir + "/hf", dir + "/q.gguf", QuantizeOptions{}, nullptr);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("qwen35"), std::string::npos) << q.to_string();
}

}  // namespace
}  // namespace edge
