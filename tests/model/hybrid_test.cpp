// The hybrid family (Qwen3.5: Gated DeltaNet layers and gated attention) in the model
// layer, on random models: the chunk-wise prefill over several 64-token chunks equals the
// token-by-token recurrence row for row, quantised weights (the DeltaNet projections packed,
// the conv kernel left F32) stay close, and malformed files are refused by name. Runs
// under the sanitizers and every ISA variant (the conformance with ik_llama.cpp is in
// tests/e2e/hybrid_conformance_test.cpp).
#include <gtest/gtest.h>

#include "formats/gguf.h"
#include "model_test_util.h"
#include "quant/quantize_file.h"

namespace edge {
namespace {

using testing::load_or_die;
using testing::prefill_logits;
using testing::rel_diff;
using testing::temp_dir;
using testing::test_tokens;

RandomModelOptions small_hybrid() {
  RandomModelOptions o;
  o.arch = "qwen35";
  o.n_layer = 4;  // layers 0-2 DeltaNet, 3 attention
  o.n_embd = 64;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.head_dim = 32;
  o.n_vocab = 600;
  o.seed = 5;
  return o;
}

TEST(HybridModel, ChunkedPrefillEqualsTheRecurrenceRowForRow) {
  const std::string dir = temp_dir("hybrid_rows");
  ASSERT_TRUE(write_random_model(small_hybrid(), dir + "/m.gguf").ok());
  auto m = load_or_die(dir + "/m.gguf");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->config().n_recurrent_layers(), 3);
  EXPECT_TRUE(m->config().attn_output_gate);
  const std::vector<int32_t> toks = test_tokens(140, 600, 11);  // 3 chunks: 64 + 64 + 12
  const std::vector<float> all = prefill_logits(*m, toks);
  ASSERT_EQ(all.size(), toks.size() * 600);
  auto st = InferenceState::create(*m, 160);
  ASSERT_TRUE(st.ok());
  double worst = 0;
  for (size_t i = 0; i < toks.size(); ++i) {
    auto r = st->forward(std::span<const int32_t>(&toks[i], 1));
    ASSERT_TRUE(r.ok());
    worst = std::max(worst, rel_diff(*r, std::span<const float>(all.data() + i * 600, 600)));
  }
  EXPECT_LT(worst, 1e-4);
}

TEST(HybridModel, QuantisedWeightsStayCloseAndTheConvStaysF32) {
  const std::string dir = temp_dir("hybrid_quant");
  ASSERT_TRUE(write_random_model(small_hybrid(), dir + "/m.gguf").ok());
  QuantizeOptions q;
  q.type = QuantType::kW8;
  ASSERT_TRUE(quantize_gguf(dir + "/m.gguf", dir + "/w8.gguf", q).ok());
  auto f = GgufFile::open(dir + "/w8.gguf", packed_gguf_types());
  ASSERT_TRUE(f.ok());
  const TensorView* qkv = f->tensors().find("blk.0.attn_qkv.weight");
  const TensorView* conv = f->tensors().find("blk.0.ssm_conv1d.weight");
  ASSERT_TRUE(qkv && conv);
  EXPECT_TRUE(is_packed_dtype(qkv->dtype));
  EXPECT_EQ(conv->dtype, DType::F32);
  auto ref = load_or_die(dir + "/m.gguf");
  auto w8 = load_or_die(dir + "/w8.gguf", 2, "f32");
  ASSERT_TRUE(ref && w8);
  const std::vector<int32_t> toks = test_tokens(30, 600, 4);
  const std::vector<float> want = prefill_logits(*ref, toks), got = prefill_logits(*w8, toks);
  // The first position carries the weights' rounding alone (measured 0.026, a dense Qwen3
  // of this shape 0.028). Later positions add the recurrence's sensitivity: on random
  // weights the state amplifies any rounding (F16 weights: 0.007 over all rows here against
  // 0.0018 for the dense Qwen3), so those rows are checked on the W8 model's own paths:
  // the packed GEMM of the chunk-wise prefill and the GEMV of decoding agree (measured 6e-6).
  EXPECT_LT(rel_diff(std::span<const float>(got.data(), 600), std::span<const float>(want.data(), 600)), 5e-2);
  auto st = InferenceState::create(*w8, 40);
  ASSERT_TRUE(st.ok());
  for (size_t i = 0; i < toks.size(); ++i) {
    auto r = st->forward(std::span<const int32_t>(&toks[i], 1));
    ASSERT_TRUE(r.ok());
    EXPECT_LT(rel_diff(*r, std::span<const float>(got.data() + i * 600, 600)), 1e-4) << i;
  }
}

TEST(HybridModel, MalformedFilesAreRefusedByName) {
  const std::string dir = temp_dir("hybrid_bad");
  ASSERT_TRUE(write_random_model(small_hybrid(), dir + "/m.gguf").ok());
  auto f = GgufFile::open(dir + "/m.gguf");
  ASSERT_TRUE(f.ok());
  // Value heads that are not a multiple of the key heads.
  {
    GgufWriter w;
    for (const auto& [key, value] : f->metadata()) w.set_value(key, value);
    w.set_u32("qwen35.ssm.group_count", 3);
    for (const TensorView& t : f->tensors().all())
      ASSERT_TRUE(w.add_tensor(t.name, t.dtype, t.shape, t.data, t.nbytes).ok());
    ASSERT_TRUE(w.write(dir + "/heads.gguf", 32).ok());
    auto m = Model::load(dir + "/heads.gguf");
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("not a multiple of key heads"), std::string::npos)
        << m.status().to_string();
  }
  // A DeltaNet tensor missing.
  {
    GgufWriter w;
    for (const auto& [key, value] : f->metadata()) w.set_value(key, value);
    for (const TensorView& t : f->tensors().all())
      if (t.name != "blk.1.ssm_a") ASSERT_TRUE(w.add_tensor(t.name, t.dtype, t.shape, t.data, t.nbytes).ok());
    ASSERT_TRUE(w.write(dir + "/missing.gguf", 32).ok());
    auto m = Model::load(dir + "/missing.gguf");
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("blk.1.ssm_a"), std::string::npos) << m.status().to_string();
  }
}

}  // namespace
}  // namespace edge
