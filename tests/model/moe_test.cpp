// Mixture-of-experts layers: the router's three gatings, the grouped expert FFN against a
// per-token loop written from the definition, stacked and per-expert files, quantised
// experts, and the errors a malformed MoE file gets.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/thread_pool.h"
#include "formats/gguf.h"
#include "kernels/packed_api.h"
#include "model/moe_ffn.h"
#include "model/moe_routing.h"
#include "model_test_util.h"
#include "quant/mxfp4.h"
#include "quant/quantize_file.h"

namespace edge {
namespace {

using testing::load_or_die;
using testing::prefill_logits;
using testing::rel_diff;
using testing::temp_dir;
using testing::test_tokens;

MoeConfig moe(ExpertGating g, int32_t n, int32_t k, bool norm) {
  MoeConfig m;
  m.n_expert = n;
  m.n_expert_used = k;
  m.n_ff_expert = 8;
  m.gating = g;
  m.norm_topk = norm;
  return m;
}

TEST(MoeRouting, SoftmaxOverAllExpertsThenTopK) {
  const float logits[4] = {1.0f, 3.0f, 2.0f, 0.0f};
  float scratch[4];
  ExpertChoice out[2];
  route_token(moe(ExpertGating::kSoftmax, 4, 2, false), logits, {}, scratch, out);
  const double z = std::exp(1.0) + std::exp(3.0) + std::exp(2.0) + std::exp(0.0);
  EXPECT_EQ(out[0].expert, 1);
  EXPECT_EQ(out[1].expert, 2);
  EXPECT_NEAR(out[0].weight, std::exp(3.0) / z, 1e-6);
  EXPECT_NEAR(out[1].weight, std::exp(2.0) / z, 1e-6);
  // Renormalised: the two weights sum to 1 in the same ratio.
  route_token(moe(ExpertGating::kSoftmax, 4, 2, true), logits, {}, scratch, out);
  EXPECT_NEAR(out[0].weight, std::exp(3.0) / (std::exp(3.0) + std::exp(2.0)), 1e-6);
  EXPECT_NEAR(out[0].weight + out[1].weight, 1.0, 1e-6);
}

TEST(MoeRouting, SoftmaxOverTheSelectedAndScale) {
  const float logits[5] = {0.5f, -1.0f, 4.0f, 0.5f, 2.5f};
  float scratch[5];
  ExpertChoice out[3];
  MoeConfig m = moe(ExpertGating::kSoftmaxSelected, 5, 3, false);
  m.weights_scale = 2.0f;
  route_token(m, logits, {}, scratch, out);
  EXPECT_EQ(out[0].expert, 2);
  EXPECT_EQ(out[1].expert, 4);
  EXPECT_EQ(out[2].expert, 0);  // a tie with expert 3: the lower index first
  const double z = std::exp(4.0) + std::exp(2.5) + std::exp(0.5);
  EXPECT_NEAR(out[0].weight, 2.0 * std::exp(4.0) / z, 1e-5);
  EXPECT_NEAR(out[2].weight, 2.0 * std::exp(0.5) / z, 1e-5);
}

TEST(MoeRouting, SigmoidChoosesWithTheBiasAndWeighsWithout) {
  const float logits[3] = {2.0f, 1.0f, 0.0f};
  const float bias[3] = {0.0f, 0.0f, 1.0f};  // lifts expert 2 above expert 1 for selection
  float scratch[3];
  ExpertChoice out[2];
  MoeConfig m = moe(ExpertGating::kSigmoid, 3, 2, false);
  m.selection_bias = true;
  route_token(m, logits, bias, scratch, out);
  EXPECT_EQ(out[0].expert, 2);
  EXPECT_EQ(out[1].expert, 0);
  EXPECT_NEAR(out[0].weight, 0.5, 1e-6);  // sigmoid(0), the bias left out
  EXPECT_NEAR(out[1].weight, 1.0 / (1.0 + std::exp(-2.0)), 1e-6);
}

RandomModelOptions small_moe(int32_t experts = 6, int32_t used = 2) {
  RandomModelOptions o;
  o.arch = "qwen3moe";
  o.n_layer = 2;
  o.n_embd = 64;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.head_dim = 16;
  o.n_ff = 96;
  o.n_expert = experts;
  o.n_expert_used = used;
  o.n_ff_expert = 32;
  o.n_vocab = 600;
  o.ctx = 64;
  o.seed = 5;
  return o;
}

// y = W x for an F32 or packed matrix view [out, in] (packed rows dequantised exactly).
std::vector<float> apply(const TensorView& w, const float* x) {
  const int64_t out = w.shape[0], in = w.shape[1];
  std::vector<float> row(static_cast<size_t>(in)), y(static_cast<size_t>(out));
  for (int64_t r = 0; r < out; ++r) {
    if (is_packed_dtype(w.dtype))
      packed_kernels().dequant_row(packed_matrix_view(w), r, row.data());
    else
      std::copy_n(reinterpret_cast<const float*>(w.data) + r * in, in, row.data());
    double s = 0;
    for (int64_t i = 0; i < in; ++i) s += double(row[static_cast<size_t>(i)]) * x[i];
    y[static_cast<size_t>(r)] = static_cast<float>(s);
  }
  return y;
}

// The MoE FFN of one token, from the definition: every selected expert on its own.
std::vector<float> moe_by_definition(const ModelConfig& c, const LayerWeights& w, const float* x) {
  const std::vector<float> logits = apply(w.router, x);
  std::vector<float> scratch(logits.size());
  std::vector<ExpertChoice> ch(static_cast<size_t>(c.moe.n_expert_used));
  route_token(c.moe, logits.data(), {}, scratch.data(), ch.data());
  std::vector<float> y(static_cast<size_t>(c.n_embd), 0.0f);
  for (const ExpertChoice& e : ch) {
    std::vector<float> g = apply(w.gate_exps[e.expert], x), u = apply(w.up_exps[e.expert], x);
    for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
    const std::vector<float> d = apply(w.down_exps[e.expert], g.data());
    for (size_t i = 0; i < y.size(); ++i) y[i] += e.weight * d[i];
  }
  return y;
}

// MoeFfn on 23 tokens of layer 1 of m against moe_by_definition, token by token.
void check_against_definition(const Model& m, double tolerance) {
  const ModelConfig& c = m.config();
  ASSERT_EQ(c.n_moe_layers(), 2);
  const int64_t n = 23, d = c.n_embd;  // > the parallel threshold: rows split over threads
  std::vector<float> x(static_cast<size_t>(n * d));
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i)) * 2.0f;
  MoeFfn ffn(c, n);
  std::vector<float> y(x.size());
  ThreadPool pool(2);
  ffn.run(c, m.weights().layers[1], m.kernels(), x.data(), n, y.data(), pool);
  std::vector<int> used(static_cast<size_t>(c.moe.n_expert), 0);
  for (const ExpertChoice& ch : ffn.choices()) ++used[static_cast<size_t>(ch.expert)];
  int chosen = 0;
  for (int u : used) chosen += u > 0;
  EXPECT_GE(chosen, 4);  // the router spreads tokens: most experts run
  for (int64_t t = 0; t < n; ++t) {
    const std::vector<float> want = moe_by_definition(c, m.weights().layers[1], x.data() + t * d);
    EXPECT_LT(rel_diff(std::span<const float>(y.data() + t * d, d), want), tolerance)
        << "token " << t;
  }
}

TEST(MoeFfn, GroupedExpertsEqualTheDefinitionPerToken) {
  const std::string dir = temp_dir("moe_def");
  ASSERT_TRUE(write_random_model(small_moe(), dir + "/m.gguf").ok());
  auto m = load_or_die(dir + "/m.gguf");
  ASSERT_TRUE(m);
  check_against_definition(*m, 1e-5);
}

TEST(MoeModel, DecodeOfOneTokenEqualsItsRowInABatch) {
  const std::string dir = temp_dir("moe_batch");
  ASSERT_TRUE(write_random_model(small_moe(8, 3), dir + "/m.gguf").ok());
  auto m = load_or_die(dir + "/m.gguf");
  ASSERT_TRUE(m);
  const std::vector<int32_t> toks = test_tokens(20, 600, 11);
  const std::vector<float> all = prefill_logits(*m, toks);
  auto st = InferenceState::create(*m, 32);
  ASSERT_TRUE(st.ok());
  for (size_t i = 0; i < toks.size(); ++i) {
    auto r = st->forward(std::span<const int32_t>(&toks[i], 1));
    ASSERT_TRUE(r.ok());
    EXPECT_LT(rel_diff(*r, std::span<const float>(all.data() + i * 600, 600)), 1e-4) << i;
  }
}

TEST(MoeModel, PerExpertTensorsLoadAsTheStack) {
  // The HF directory holds one tensor per expert, the GGUF file the stacks.
  const std::string dir = temp_dir("moe_forms");
  ASSERT_TRUE(write_random_model(small_moe(), dir + "/m.gguf").ok());
  ASSERT_TRUE(write_random_model(small_moe(), dir + "/hf").ok());
  auto g = load_or_die(dir + "/m.gguf");
  auto h = load_or_die(dir + "/hf");
  ASSERT_TRUE(g && h);
  EXPECT_EQ(describe_config(g->config()), describe_config(h->config()));
  EXPECT_EQ(g->weights().layers[0].gate_exps.size(), 6u);
  const std::vector<int32_t> toks = test_tokens(9, 600, 3);
  EXPECT_LT(rel_diff(prefill_logits(*g, toks), prefill_logits(*h, toks)), 1e-5);
}

TEST(MoeModel, QuantisedExpertsStayCloseAndLoadByMmap) {
  const std::string dir = temp_dir("moe_quant");
  ASSERT_TRUE(write_random_model(small_moe(), dir + "/m.gguf").ok());
  QuantizeOptions q;
  q.type = QuantType::kW8;
  ASSERT_TRUE(quantize_gguf(dir + "/m.gguf", dir + "/w8.gguf", q).ok());
  auto f = GgufFile::open(dir + "/w8.gguf", packed_gguf_types());
  ASSERT_TRUE(f.ok());
  const TensorView* stack = f->tensors().find("blk.0.ffn_up_exps.weight");
  ASSERT_NE(stack, nullptr);
  EXPECT_TRUE(is_packed_dtype(stack->dtype));
  EXPECT_EQ(stack->shape, (std::vector<int64_t>{6, 32, 64}));
  const TensorView* router = f->tensors().find("blk.0.ffn_gate_inp.weight");
  ASSERT_NE(router, nullptr);
  EXPECT_EQ(router->dtype, DType::F32);  // the router is left as it is
  // Packed experts, f32 activations: the grouped FFN equals the definition on the packed
  // weights' exact values (routing sees the same input, so no expert choice can flip).
  auto w8 = load_or_die(dir + "/w8.gguf", 2, "f32");
  ASSERT_TRUE(w8);
  check_against_definition(*w8, 1e-4);
  // Pre-packed: every expert stack is used in place from the mapping, none copied.
  EXPECT_GE(w8->memory().weights_mapped, static_cast<int64_t>(2 * 3 * stack->nbytes));
  EXPECT_LT(w8->memory().weights_anon, 64 * 1024);        // the F32 norm vectors only
  EXPECT_EQ(w8->memory().expert_ranges.size(), 2u * 3u);  // every stack, file-backed
  // And with int8 activations (the file's default) the model decodes as it prefills.
  auto w8a8 = load_or_die(dir + "/w8.gguf");
  ASSERT_TRUE(w8a8);
  check_against_definition(*w8a8, 3e-2);
}

// make-model --experts-type mxfp4: the stacked experts are GGML's MXFP4 blocks of exactly
// the weights the F32 file of the same seed holds (the bytes GGML's rule gives them), the
// rest is unchanged, and the model loads and decodes near the F32 one.
TEST(MoeModel, MakeModelWritesMxfp4ExpertsOfTheSameWeights) {
  const std::string dir = temp_dir("moe_mxfp4_experts");
  RandomModelOptions o = small_moe(4, 2);
  ASSERT_TRUE(write_random_model(o, dir + "/f32.gguf").ok());
  o.experts_dtype = DType::MXFP4;
  ASSERT_TRUE(write_random_model(o, dir + "/mx.gguf").ok());
  auto f32 = GgufFile::open(dir + "/f32.gguf");
  auto mx = GgufFile::open(dir + "/mx.gguf");
  ASSERT_TRUE(f32.ok() && mx.ok());
  EXPECT_EQ(mx->get_int_or("general.file_type", 0), 38);
  int experts = 0;
  for (const TensorView& t : f32->tensors().all()) {
    const TensorView* m = mx->tensors().find(t.name);
    ASSERT_NE(m, nullptr) << t.name;
    if (t.name.find("_exps.weight") == std::string::npos) {
      EXPECT_EQ(m->dtype, t.dtype) << t.name;
      continue;
    }
    ++experts;
    ASSERT_EQ(m->dtype, DType::MXFP4) << t.name;
    std::vector<uint8_t> want(static_cast<size_t>(t.numel() / 32 * 17));
    ASSERT_TRUE(
        quantize_mxfp4_row(reinterpret_cast<const float*>(t.data), t.numel(), want.data()).ok());
    ASSERT_EQ(m->nbytes, want.size()) << t.name;
    EXPECT_EQ(std::memcmp(m->data, want.data(), want.size()), 0) << t.name;
  }
  EXPECT_EQ(experts, 3 * o.n_layer);
  const auto tokens = test_tokens(8, o.n_vocab);
  auto a = load_or_die(dir + "/f32.gguf");
  auto b = load_or_die(dir + "/mx.gguf");
  const std::vector<float> la = prefill_logits(*a, tokens), lb = prefill_logits(*b, tokens);
  for (float v : lb) ASSERT_TRUE(std::isfinite(v));
  EXPECT_LT(rel_diff(la, lb), 0.5) << "MXFP4 experts moved the logits too far";
  // Bad requests name what is wrong.
  o.n_ff_expert = 40;  // rows of 40: not whole blocks
  Status st = write_random_model(o, dir + "/bad.gguf");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("multiple of 32"), std::string::npos) << st.message();
  o.n_ff_expert = 32;
  st = write_random_model(o, dir + "/hf_dir");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("GGUF"), std::string::npos) << st.message();
  o.experts_dtype = DType::Q4_0;
  EXPECT_EQ(write_random_model(o, dir + "/q4.gguf").code(), StatusCode::kInvalidArgument);
}

// quantize --type f16 --repack: MXFP4 experts become packed cells (mapped, no copy at load),
// F16 attention stays F16: the same model as the GGUF file, logit for logit.
TEST(MoeModel, RepackOnlyKeepsFloatsAndMapsTheExperts) {
  const std::string dir = temp_dir("moe_repack_only");
  RandomModelOptions o = small_moe(4, 2);
  o.dtype = DType::F16;
  o.experts_dtype = DType::MXFP4;
  ASSERT_TRUE(write_random_model(o, dir + "/mx.gguf").ok());
  QuantizeOptions q;
  q.type = QuantType::kF16;
  q.repack_blocks = true;
  ASSERT_TRUE(quantize_gguf(dir + "/mx.gguf", dir + "/packed.gguf", q).ok());
  auto f = GgufFile::open(dir + "/packed.gguf", packed_gguf_types());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const TensorView* up = f->tensors().find("blk.0.ffn_up_exps.weight");
  const TensorView* wq = f->tensors().find("blk.0.attn_q.weight");
  ASSERT_TRUE(up != nullptr && wq != nullptr);
  EXPECT_TRUE(is_packed_dtype(up->dtype));
  EXPECT_EQ(wq->dtype, DType::F16);
  const auto tokens = test_tokens(8, o.n_vocab);
  auto a = load_or_die(dir + "/mx.gguf");
  auto b = load_or_die(dir + "/packed.gguf");
  EXPECT_EQ(prefill_logits(*a, tokens), prefill_logits(*b, tokens));
  // --repack belongs to f16 (the other types repack block types anyway).
  q.type = QuantType::kW4A8;
  EXPECT_EQ(quantize_gguf(dir + "/mx.gguf", dir + "/bad.gguf", q).code(),
            StatusCode::kInvalidArgument);
}

TEST(MoeModel, MalformedExpertsAreRefusedByName) {
  const std::string dir = temp_dir("moe_bad");
  ASSERT_TRUE(write_random_model(small_moe(), dir + "/m.gguf").ok());
  // Too many experts used per token for the experts there are.
  RandomModelOptions o = small_moe(4, 5);
  Status s = write_random_model(o, dir + "/bad.gguf");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("expert_used_count 5"), std::string::npos) << s.to_string();
  // Experts for a dense family are refused by make-model.
  o = small_moe();
  o.arch = "qwen3";
  s = write_random_model(o, dir + "/dense.gguf");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not a mixture-of-experts family"), std::string::npos)
      << s.to_string();
}

}  // namespace
}  // namespace edge
