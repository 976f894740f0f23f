// write_model_gguf: a GGUF Llama with tokenizer round-trips to the same logits and
// vocabulary; what the llama GGUF layout cannot express is refused.
#include <gtest/gtest.h>

#include <algorithm>

#include "convert/export_gguf.h"
#include "model/model_test_util.h"
#include "quant/quantize_file.h"

namespace edge {
namespace {

using testing::load_or_die;
using testing::prefill_logits;
using testing::temp_dir;
using testing::test_tokens;

TEST(ExportGguf, LlamaRoundTripsWithTokenizer) {
  const std::string dir = temp_dir("export_llama");
  RandomModelOptions o;
  o.dtype = DType::F16;
  o.llama3_rope_factor = 8.0f;  // rope_freqs.weight must travel too
  ASSERT_TRUE(write_random_model(o, dir + "/a.gguf").ok());
  auto a = load_or_die(dir + "/a.gguf");
  ASSERT_TRUE(a);
  Status st = write_model_gguf(*a, dir + "/b.gguf");
  ASSERT_TRUE(st.ok()) << st.to_string();
  auto b = load_or_die(dir + "/b.gguf");
  ASSERT_TRUE(b && b->tokenizer());
  EXPECT_EQ(b->weights().layers[1].w_up.dtype, DType::F16);
  EXPECT_EQ(b->config().rope_freq_factors, a->config().rope_freq_factors);
  EXPECT_EQ(b->tokenizer()->encode("once upon a time"), a->tokenizer()->encode("once upon a time"));
  const auto toks = test_tokens(9, a->config().n_vocab);
  const std::vector<float> la = prefill_logits(*a, toks), lb = prefill_logits(*b, toks);
  ASSERT_EQ(la.size(), lb.size());
  EXPECT_TRUE(std::equal(la.begin(), la.end(), lb.begin()));
}

TEST(ExportGguf, RefusesWhatLlamaGgufCannotHold) {
  const std::string dir = temp_dir("export_refuse");
  RandomModelOptions o;
  o.arch = "qwen2";
  ASSERT_TRUE(write_random_model(o, dir + "/qwen2.gguf").ok());
  o.arch = "llama";
  ASSERT_TRUE(write_random_model(o, dir + "/llama_hf").ok());  // rotate-half RoPE rows
  ASSERT_TRUE(write_random_model(o, dir + "/llama.gguf").ok());
  QuantizeOptions q;
  q.type = QuantType::kW8;
  ASSERT_TRUE(quantize_gguf(dir + "/llama.gguf", dir + "/w8.gguf", q).ok());
  for (const char* name : {"qwen2.gguf", "llama_hf", "w8.gguf"}) {
    auto m = load_or_die(dir + "/" + name);
    ASSERT_TRUE(m);
    Status st = write_model_gguf(*m, dir + "/out.gguf");
    EXPECT_EQ(st.code(), StatusCode::kUnsupported) << name << ": " << st.to_string();
  }
}

}  // namespace
}  // namespace edge
