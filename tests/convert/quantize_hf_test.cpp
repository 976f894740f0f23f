// quantize_hf_dir: a made HF directory converted to GGUF loads to the logits of the
// directory (f16 passthrough: the same weights, so float rounding only; packed: within the
// quantisation error), and its packed tensors are byte for byte those quantize_gguf makes
// from the GGUF twin of the same model (so the Llama q/k row reordering is exact).
#include "convert/quantize_hf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "formats/gguf.h"
#include "model/model_test_util.h"
#include "quant/packed.h"

namespace edge {
namespace {

using testing::load_or_die;
using testing::prefill_logits;
using testing::rel_diff;
using testing::temp_dir;
using testing::test_tokens;

RandomModelOptions small(const std::string& arch, DType dtype) {
  RandomModelOptions o;
  o.arch = arch;
  o.n_embd = 64;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_ff = 128;
  o.n_vocab = 448;
  o.dtype = dtype;
  if (arch == "llama") o.llama3_rope_factor = 8.0f;  // rope_freqs.weight must be written
  if (arch == "gemma3") {
    o.n_layer = 3;
    o.sliding_pattern = 3;
    o.sliding_window = 4;
  }
  return o;
}

// The same tokens, logits within `tol` (relative to the logits' scale), same tokenizer.
void expect_same_model(const std::string& a_path, const std::string& b_path, double tol) {
  auto a = load_or_die(a_path);
  auto b = load_or_die(b_path);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->tokenizer() && b->tokenizer()) << b_path;
  EXPECT_EQ(b->tokenizer()->encode("once upon a time"), a->tokenizer()->encode("once upon a time"));
  EXPECT_EQ(b->config().n_sliding_layers(), a->config().n_sliding_layers());
  EXPECT_EQ(b->config().rope_freq_factors, a->config().rope_freq_factors);
  const auto toks = test_tokens(12, a->config().n_vocab);
  const double d = rel_diff(prefill_logits(*b, toks), prefill_logits(*a, toks));
  EXPECT_LT(d, tol) << b_path;
  ::testing::Test::RecordProperty(std::filesystem::path(b_path).filename().string(), std::to_string(d));
}

class QuantizeHf : public ::testing::TestWithParam<std::string> {};

TEST_P(QuantizeHf, F16PassthroughKeepsTheLogits) {
  const std::string arch = GetParam();
  const std::string dir = temp_dir("qhf_f16_" + arch);
  ASSERT_TRUE(write_random_model(small(arch, DType::F16), dir + "/hf").ok());
  QuantizeOptions o;
  o.type = QuantType::kF16;
  Status st = quantize_hf_dir(dir + "/hf", dir + "/f16.gguf", o);
  ASSERT_TRUE(st.ok()) << st.to_string();
  // The same F16 weights: only the order of float sums differs (Llama's q/k dims are
  // permuted, so q.k adds in another order).
  expect_same_model(dir + "/hf", dir + "/f16.gguf", 1e-5);
}

TEST_P(QuantizeHf, PackedMatchesTheGgufTwinByteForByte) {
  const std::string arch = GetParam();
  const std::string dir = temp_dir("qhf_w4_" + arch);
  const RandomModelOptions m = small(arch, DType::F32);
  ASSERT_TRUE(write_random_model(m, dir + "/hf").ok());
  ASSERT_TRUE(write_random_model(m, dir + "/twin.gguf").ok());
  QuantizeOptions o;
  o.type = QuantType::kW4A16;
  o.group = 64;
  o.threads = 2;
  Status st = quantize_hf_dir(dir + "/hf", dir + "/hf.gguf", o);
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_TRUE(quantize_gguf(dir + "/twin.gguf", dir + "/twin_q.gguf", o).ok());
  auto a = GgufFile::open(dir + "/hf.gguf", packed_gguf_types());
  auto b = GgufFile::open(dir + "/twin_q.gguf", packed_gguf_types());
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().to_string();
  EXPECT_EQ(a->get_string_or("edge.quant.type", ""), "w4a16");
  ASSERT_EQ(a->tensors().size(), b->tensors().size());
  int packed = 0;
  for (const TensorView& t : b->tensors().all()) {
    const TensorView* u = a->tensors().find(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_EQ(u->dtype, t.dtype) << t.name;
    EXPECT_EQ(u->shape, t.shape) << t.name;
    if (!is_packed_dtype(t.dtype)) continue;  // Gemma's norms: 1 + w vs (w) + 1 may round apart
    ++packed;
    EXPECT_EQ(std::memcmp(u->data, t.data, t.nbytes), 0) << t.name;
  }
  EXPECT_GE(packed, 8);
  // The same model as the twin's quantisation (norms aside, the same bytes) ...
  expect_same_model(dir + "/twin_q.gguf", dir + "/hf.gguf", 1e-5);
  // ... and near the float directory: 4-bit codes of random weights in a 64-wide model move
  // the logits by about a third of their largest value (measured 0.29-0.42), W8 (int8
  // activations too) by far less (measured 0.016-0.030). A misordered q/k row already
  // fails the byte comparison above.
  expect_same_model(dir + "/hf", dir + "/hf.gguf", 0.6);
  o.type = QuantType::kW8;
  o.group = 32;
  ASSERT_TRUE(quantize_hf_dir(dir + "/hf", dir + "/w8.gguf", o).ok());
  expect_same_model(dir + "/hf", dir + "/w8.gguf", 0.05);
}

INSTANTIATE_TEST_SUITE_P(Families, QuantizeHf, ::testing::Values("llama", "qwen2", "qwen3", "gemma3"));

// Errors leave no output: no OUT, no OUT.tmp.
void expect_refused(const std::string& in, const std::string& out, const QuantizeOptions& o,
                    StatusCode code, const std::string& says) {
  Status st = quantize_hf_dir(in, out, o);
  EXPECT_EQ(st.code(), code) << st.to_string();
  EXPECT_NE(st.message().find(says), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(out)) << out;
  EXPECT_FALSE(std::filesystem::exists(out + ".tmp")) << out;
}

TEST(QuantizeHfErrors, BadInputsWriteNothing) {
  const std::string dir = temp_dir("qhf_errors");
  const std::string out = dir + "/out.gguf";
  ASSERT_TRUE(write_random_model(small("llama", DType::F32), dir + "/hf").ok());
  QuantizeOptions o;
  expect_refused(dir + "/missing", out, o, StatusCode::kNotFound, "missing");
  // config.json but no weights.
  std::filesystem::create_directories(dir + "/empty");
  std::filesystem::copy_file(dir + "/hf/config.json", dir + "/empty/config.json");
  Status st = quantize_hf_dir(dir + "/empty", out, o);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("safetensors"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(out));
  o.group = 96;
  expect_refused(dir + "/hf", out, o, StatusCode::kInvalidArgument, "group 96");
  // A Mistral-style sliding window: GGUF llama cannot express it.
  std::filesystem::create_directories(dir + "/swa");
  for (const auto& e : std::filesystem::directory_iterator(dir + "/hf"))
    std::filesystem::copy_file(e.path(), dir + "/swa/" + e.path().filename().string());
  std::string cfg;
  {
    std::ifstream f(dir + "/hf/config.json");
    cfg.assign(std::istreambuf_iterator<char>(f), {});
  }
  cfg.insert(cfg.find('{') + 1, "\"sliding_window\": 16,");
  std::ofstream(dir + "/swa/config.json", std::ios::trunc) << cfg;
  o.group = 0;
  expect_refused(dir + "/swa", out, o, StatusCode::kUnsupported, "sliding");
}

}  // namespace
}  // namespace edge
