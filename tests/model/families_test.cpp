// Every family on a small random model: token-by-token decode equals a batched prefill
// (past the sliding window too), the GGUF file and the HF directory of the same model give
// the same logits, and the sliding window really hides tokens older than the window.
#include <gtest/gtest.h>

#include "model/registry.h"
#include "model_test_util.h"

namespace edge {
namespace {

using testing::load_or_die;
using testing::prefill_logits;
using testing::rel_diff;
using testing::temp_dir;
using testing::test_tokens;

RandomModelOptions small(const std::string& arch) {
  RandomModelOptions o;
  o.arch = arch;
  o.n_layer = arch == "gemma3" ? 6 : 4;  // gemma3: 5 sliding + 1 global; spark: 3 + 1
  o.n_embd = 48;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.head_dim = 16;                       // != n_embd / n_head, as Qwen3 and Gemma allow
  o.n_ff = 80;
  o.n_vocab = 600;
  o.ctx = 64;
  o.sliding_window = 5;
  o.seed = 42;
  return o;
}

class FamilyTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FamilyTest, DecodeMatchesBatchedPrefillPastTheWindow) {
  const std::string dir = temp_dir("decode_" + GetParam());
  const std::string path = dir + "/m.gguf";
  ASSERT_TRUE(write_random_model(small(GetParam()), path).ok());
  auto m = load_or_die(path, 3);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->config().arch, GetParam());
  const int32_t V = m->config().n_vocab;
  const std::vector<int32_t> toks = test_tokens(13, V);  // > 2 windows of 5
  const std::vector<float> batched = prefill_logits(*m, toks);

  auto st = InferenceState::create(*m, 16);
  ASSERT_TRUE(st.ok());
  for (size_t i = 0; i < toks.size(); ++i) {
    auto r = st->forward(std::span<const int32_t>(&toks[i], 1));
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    ASSERT_EQ(r->size(), static_cast<size_t>(V));
    std::span<const float> want(batched.data() + i * V, V);
    EXPECT_LT(rel_diff(*r, want), 1e-4) << "position " << i;
  }
  // A prompt split into uneven chunks gives the same last logits as well.
  st->reset();
  ASSERT_TRUE(st->forward(std::span<const int32_t>(toks.data(), 4)).ok());
  auto last = st->forward(std::span<const int32_t>(toks.data() + 4, toks.size() - 4));
  ASSERT_TRUE(last.ok());
  EXPECT_LT(rel_diff(*last, std::span<const float>(batched.data() + (toks.size() - 1) * V, V)), 1e-4);
  // Logits are not degenerate: a spread, not one-hot nor flat.
  float lo = 1e30f, hi = -1e30f;
  for (float v : *last) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_GT(hi - lo, 1.0f);
  EXPECT_LT(hi - lo, 100.0f);
}

TEST_P(FamilyTest, GgufAndHfDirectoryGiveTheSameLogits) {
  const std::string dir = temp_dir("formats_" + GetParam());
  RandomModelOptions o = small(GetParam());
  if (find_family_gguf(GetParam())->hf_model_types.empty()) {
    // A family read from GGUF only: the HF writer says so instead of writing a directory.
    EXPECT_EQ(write_random_model(o, dir + "/hf").code(), StatusCode::kUnsupported);
    return;  // GGUF only: the refusal above is what is checked
  }
  ASSERT_TRUE(write_random_model(o, dir + "/m.gguf").ok());
  Status hf = write_random_model(o, dir + "/hf");
  ASSERT_TRUE(hf.ok()) << hf.to_string();
  auto g = load_or_die(dir + "/m.gguf");
  auto h = load_or_die(dir + "/hf");
  ASSERT_TRUE(g && h);
  EXPECT_EQ(h->format(), ModelFormat::kHfDir);
  ModelConfig gc = g->config(), hc = h->config();
  if (find_family_gguf(GetParam())->gguf_rope_style == RopeStyle::kInterleaved) {
    // The same weights: GGUF rows permuted for interleaved RoPE, HF rows for rotate-half.
    EXPECT_EQ(gc.rope_style, RopeStyle::kInterleaved);
    EXPECT_EQ(hc.rope_style, RopeStyle::kNeox);
    hc.rope_style = gc.rope_style;
  }
  // GPT-OSS: every layer is MoE and config.json's intermediate_size is the experts' width;
  // its HF YaRN does not round the correction range ("truncate": false), llama.cpp's GGUF
  // path does, so the logits differ a little (gpt_oss_hf_test.cpp: equal once it agrees).
  const bool fused = find_family_gguf(GetParam())->hf_fused_experts;
  if (fused) hc.n_ff = gc.n_ff;
  EXPECT_EQ(describe_config(gc), describe_config(hc));
  ASSERT_NE(g->tokenizer(), nullptr);
  ASSERT_NE(h->tokenizer(), nullptr);
  EXPECT_EQ(g->tokenizer()->n_vocab(), h->tokenizer()->n_vocab());
  const std::vector<int32_t> toks = test_tokens(11, o.n_vocab, 3);
  EXPECT_LT(rel_diff(prefill_logits(*g, toks), prefill_logits(*h, toks)), fused ? 2e-2 : 1e-4);
}

TEST_P(FamilyTest, HalfPrecisionWeightsStayCloseToF32) {
  const std::string dir = temp_dir("dtype_" + GetParam());
  RandomModelOptions o = small(GetParam());
  ASSERT_TRUE(write_random_model(o, dir + "/f32.gguf").ok());
  o.dtype = DType::F16;
  ASSERT_TRUE(write_random_model(o, dir + "/f16.gguf").ok());
  o.dtype = DType::BF16;
  const bool hf = !find_family_gguf(GetParam())->hf_model_types.empty();
  ASSERT_TRUE(write_random_model(o, dir + (hf ? "/hf_bf16" : "/bf16.gguf")).ok());
  const std::vector<int32_t> toks = test_tokens(9, o.n_vocab, 5);
  auto ref = prefill_logits(*load_or_die(dir + "/f32.gguf"), toks);
  auto f16 = prefill_logits(*load_or_die(dir + "/f16.gguf"), toks);
  auto bf16 = prefill_logits(*load_or_die(dir + (hf ? "/hf_bf16" : "/bf16.gguf")), toks);
  if (random_model_config(o)->n_recurrent_layers() > 0) {
    // A DeltaNet head's read-out is (k'.q') beta v at the first token, then normed per
    // head: where a random q and k are nearly orthogonal, weight rounding flips the head's
    // sign, and the state carries that on (qwen35moe measured 0.22 over 9 rows in F16, a
    // routing flip on top). The first row, before any state, carries the rounding alone.
    const size_t V = static_cast<size_t>(o.n_vocab);
    EXPECT_LT(rel_diff(std::span<const float>(f16.data(), V), std::span<const float>(ref.data(), V)), 1e-2);
    EXPECT_LT(rel_diff(std::span<const float>(bf16.data(), V), std::span<const float>(ref.data(), V)), 5e-2);
    EXPECT_LT(rel_diff(f16, ref), 0.5);  // still the same model: garbage is > 1
    return;
  }
  EXPECT_LT(rel_diff(f16, ref), 1e-2);
  EXPECT_LT(rel_diff(bf16, ref), 5e-2);
}

// Every model the family table can make (a new family is tested by adding its row).
std::vector<std::string> every_variant() {
  std::vector<std::string> archs;
  for (const ArchFamily* f : all_families())
    for (const ArchVariant& v : f->variants) archs.push_back(v.arch);
  return archs;
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyTest, ::testing::ValuesIn(every_variant()));

// One sliding layer of window 5: a token 5 or more positions back must not influence the
// logits, a token inside the window must.
TEST(SlidingWindow, HidesTokensOlderThanTheWindow) {
  RandomModelOptions o = small("gemma3");
  o.n_layer = 1;  // layer 0 of the 5+1 pattern is sliding
  const std::string path = temp_dir("window") + "/m.gguf";
  ASSERT_TRUE(write_random_model(o, path).ok());
  auto m = load_or_die(path);
  ASSERT_TRUE(m);
  ASSERT_TRUE(m->config().layers[0].sliding);
  const int32_t V = o.n_vocab;
  std::vector<int32_t> a = test_tokens(8, V, 1), b = a;
  b[2] = (b[2] + 1) % V;  // position 2: outside the window of position 7 (7-2 = 5)
  auto la = prefill_logits(*m, a), lb = prefill_logits(*m, b);
  std::span<const float> a7(la.data() + 7 * V, V), b7(lb.data() + 7 * V, V);
  std::span<const float> a6(la.data() + 6 * V, V), b6(lb.data() + 6 * V, V);
  EXPECT_EQ(rel_diff(a7, b7), 0.0);  // exactly hidden
  EXPECT_GT(rel_diff(a6, b6), 1e-4);  // 6-2 = 4 < 5: visible
}

// Spark's shape from the seed, scaled down: 28 layers -> 21 sliding + 7 global, global
// layers rotate a quarter of the head, theta differs per layer type.
TEST(Spark, PatternAndPerTypeRope) {
  RandomModelOptions o = small("spark");
  o.n_layer = 28;
  o.n_embd = 32;
  o.n_head = 8;
  o.n_head_kv = 2;
  o.head_dim = 16;
  o.n_ff = 32;
  o.sliding_window = 512;
  for (const char* out : {"/m.gguf", "/hf"}) {
    const std::string path = temp_dir(std::string("spark") + (out + 1)) + out;
    ASSERT_TRUE(write_random_model(o, path).ok());
    auto m = load_or_die(path);
    ASSERT_TRUE(m);
    const ModelConfig& c = m->config();
    EXPECT_EQ(c.n_sliding_layers(), 21) << out;
    for (int i = 0; i < c.n_layer; ++i) {
      const LayerConfig& l = c.layers[i];
      EXPECT_EQ(l.sliding, (i + 1) % 4 != 0) << out << " layer " << i;
      EXPECT_EQ(l.rotary_dim, l.sliding ? 16 : 4) << out << " layer " << i;
      EXPECT_EQ(l.rope_theta, l.sliding ? 10000.0f : 1e6f) << out << " layer " << i;
      if (l.sliding) {
        EXPECT_EQ(l.window, 512);
      }
    }
    EXPECT_TRUE(c.tied_embeddings && c.qk_norm && c.post_norms && c.scale_embeddings);
    EXPECT_EQ(c.act, Activation::kGeGlu);
  }
}

TEST(Registry, KnowsEveryFamily) {
  for (const char* a : {"llama", "qwen2", "qwen3", "gemma3", "spark", "qwen3moe"})
    EXPECT_NE(find_family_gguf(a), nullptr) << a;
  EXPECT_EQ(find_family_gguf("mamba"), nullptr);
  EXPECT_EQ(find_family_hf("gemma3_text"), &gemma3_family());
  EXPECT_EQ(find_family_hf("mistral"), &llama_family());
}

// The family table's writer facts agree with its readers: every variant is read back by
// its own family under its GGUF name and its HF model_type, a made-up model of it keeps
// its name, and hf_name_of inverts hf_tensor_name on every tensor of its schema.
TEST(Registry, VariantsAreReadBackByTheirFamily) {
  for (const ArchFamily* f : all_families()) {
    ASSERT_FALSE(f->variants.empty()) << f->name;
    EXPECT_EQ(f->variants[0].arch, f->name);
    for (const ArchVariant& v : f->variants) {
      EXPECT_EQ(find_family_gguf(v.arch), f) << v.arch;
      if (f->hf_model_types.empty()) continue;  // GGUF only
      EXPECT_EQ(find_family_hf(v.hf_model_type), f) << v.hf_model_type;
      EXPECT_EQ(f->variant(v.arch), &v);
      auto c = random_model_config(small(v.arch));
      ASSERT_TRUE(c.ok()) << c.status().to_string();
      EXPECT_EQ(c->arch, v.arch);
      const TensorSchema schema = f->schema(*c);  // outlives the loop over its specs
      for (const TensorSpec& s : schema.specs()) {
        if (!s.required) continue;
        // GPT-OSS fuses its experts (gpt_oss_hf_test.cpp checks that form).
        if (s.experts > 0 && f->hf_fused_experts) continue;
        // Stacked experts are one tensor per expert in an HF checkpoint.
        const std::string name = s.experts > 0 ? expert_tensor_name(s.name, s.experts - 1) : s.name;
        const std::string hf = f->hf_name_of(name);
        EXPECT_FALSE(hf.empty()) << name;
        // A tensor the family rebuilds at load (Qwen3.5's A_log) maps to no name of its own.
        if (f->hf_derives && f->hf_derives(hf)) continue;
        EXPECT_EQ(f->hf_tensor_name(hf), name) << hf;
      }
    }
  }
  for (const std::string& arch : every_variant())
    EXPECT_NE(writable_architectures().find(arch), std::string::npos) << arch;
  EXPECT_EQ(writable_architectures().rfind("llama, qwen2, qwen3, gemma3, spark", 0), 0u);
  EXPECT_EQ(writable_architectures().find("spark2_5"), std::string::npos);
  EXPECT_EQ(gemma3_family().variant("spark2_5"), nullptr);  // read, never written
  EXPECT_FALSE(random_model_config(small("spark2_5")).ok());
}

}  // namespace
}  // namespace edge

namespace edge {
namespace {

// Llama-3.1 RoPE scaling: GGUF carries rope_freqs.weight, HF a rope_scaling object; both
// must load to the same factors and logits, and the scaling must change the logits.
TEST(Llama3RopeScaling, GgufTensorAndHfConfigAgree) {
  const std::string dir = testing::temp_dir("llama3_rope");
  RandomModelOptions o = small("llama");
  o.llama3_rope_factor = 8.0f;
  ASSERT_TRUE(write_random_model(o, dir + "/m.gguf").ok());
  ASSERT_TRUE(write_random_model(o, dir + "/hf").ok());
  o.llama3_rope_factor = 0.0f;
  ASSERT_TRUE(write_random_model(o, dir + "/plain.gguf").ok());
  auto g = testing::load_or_die(dir + "/m.gguf");
  auto h = testing::load_or_die(dir + "/hf");
  auto p = testing::load_or_die(dir + "/plain.gguf");
  ASSERT_TRUE(g && h && p);
  const std::vector<float>& fg = g->config().rope_freq_factors;
  ASSERT_EQ(fg.size(), 8u);  // head_dim 16 / 2
  EXPECT_EQ(fg, h->config().rope_freq_factors);
  EXPECT_EQ(fg.front(), 1.0f);  // short wavelengths kept
  EXPECT_EQ(fg.back(), 8.0f);   // long wavelengths slowed by the factor
  EXPECT_TRUE(p->config().rope_freq_factors.empty());
  const std::vector<int32_t> toks = testing::test_tokens(12, o.n_vocab, 9);
  auto lg = testing::prefill_logits(*g, toks);
  EXPECT_LT(testing::rel_diff(lg, testing::prefill_logits(*h, toks)), 1e-4);
  EXPECT_GT(testing::rel_diff(lg, testing::prefill_logits(*p, toks)), 1e-4);
}

}  // namespace
}  // namespace edge
