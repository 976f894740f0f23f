// Refusals at load and at run time, each naming what is wrong: a missing tensor, a
// mis-shaped tensor (expected vs found), an unsupported tensor type, an unknown
// architecture, a token id past the vocabulary, a prompt longer than the context; and
// what is no model at all (detect_model_format).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "formats/gguf.h"
#include "formats/model_format.h"
#include "model/model_footprint.h"
#include "model_test_util.h"

namespace edge {
namespace {

using testing::load_or_die;
using testing::temp_dir;

RandomModelOptions tiny() {
  RandomModelOptions o;
  o.arch = "qwen3";
  o.n_layer = 2;
  o.n_embd = 64;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_ff = 96;
  o.n_vocab = 512;
  return o;
}

struct TensorEdit {
  bool keep = true;
  std::vector<int64_t> shape;  // may be changed; bytes become zeros of the new size
  DType dtype;
};

// Copies src to dst, letting `edit` change metadata keys and tensors.
Status rewrite_gguf(const std::string& src, const std::string& dst,
                    const std::function<void(const std::string&, TensorEdit&)>& edit,
                    const std::function<void(GgufWriter&)>& extra_kv = nullptr) {
  ASSIGN_OR_RETURN(GgufFile f, GgufFile::open(src));
  GgufWriter w;
  for (const auto& [k, v] : f.metadata())
    if (k != "general.architecture" || !extra_kv) w.set_value(k, v);
  if (extra_kv) extra_kv(w);
  for (const TensorView& t : f.tensors().all()) {
    TensorEdit e{true, t.shape, t.dtype};
    edit(t.name, e);
    if (!e.keep) continue;
    if (e.shape == t.shape && e.dtype == t.dtype) {
      RETURN_IF_ERROR(w.add_tensor(t.name, t.dtype, t.shape, t.data, t.nbytes));
      continue;
    }
    int64_t n = 1;
    for (int64_t d : e.shape) n *= d;
    ASSIGN_OR_RETURN(uint64_t row, dtype_row_bytes(e.dtype, e.shape.back()));
    const uint64_t bytes = row * static_cast<uint64_t>(n / e.shape.back());
    RETURN_IF_ERROR(w.add_tensor(t.name, e.dtype, e.shape, [bytes](uint8_t* d, uint64_t nb) {
      std::fill(d, d + nb, uint8_t{0});
      return nb == bytes ? Status() : Status::internal("size");
    }));
  }
  return w.write(dst);
}

class LoadErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    good_ = dir_ + "/good.gguf";
    ASSERT_TRUE(write_random_model(tiny(), good_).ok());
  }
  Status load_status(const std::string& path) {
    auto m = Model::load(path);
    return m.ok() ? Status() : m.status();
  }
  std::string dir_, good_;
};

TEST_F(LoadErrors, MissingTensorIsNamed) {
  const std::string bad = dir_ + "/missing.gguf";
  ASSERT_TRUE(rewrite_gguf(good_, bad, [](const std::string& n, TensorEdit& e) {
                if (n == "blk.1.attn_k_norm.weight") e.keep = false;
              }).ok());
  Status s = load_status(bad);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("missing tensor blk.1.attn_k_norm.weight"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("[16]"), std::string::npos) << s.message();
}

TEST_F(LoadErrors, MisShapedTensorShowsExpectedAndFound) {
  const std::string bad = dir_ + "/shape.gguf";
  ASSERT_TRUE(rewrite_gguf(good_, bad, [](const std::string& n, TensorEdit& e) {
                if (n == "blk.0.ffn_up.weight") e.shape = {95, 64};
              }).ok());
  Status s = load_status(bad);
  EXPECT_EQ(s.code(), StatusCode::kInvalidFormat);
  EXPECT_NE(s.message().find("tensor blk.0.ffn_up.weight: expected shape [96, 64], found [95, 64]"),
            std::string::npos)
      << s.message();
}

TEST_F(LoadErrors, UnsupportedTensorTypeIsNamed) {
  const std::string bad = dir_ + "/type.gguf";
  ASSERT_TRUE(rewrite_gguf(good_, bad, [](const std::string& n, TensorEdit& e) {
                if (n == "blk.1.attn_v.weight") e.dtype = DType::I32;  // not a weight type
              }).ok());
  Status s = load_status(bad);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("blk.1.attn_v.weight"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("i32"), std::string::npos) << s.message();
}

TEST_F(LoadErrors, UnknownArchitectureIsNamed) {
  const std::string bad = dir_ + "/arch.gguf";
  ASSERT_TRUE(rewrite_gguf(good_, bad, [](const std::string&, TensorEdit&) {},
                           [](GgufWriter& w) { w.set_string("general.architecture", "mamba9"); })
                  .ok());
  Status s = load_status(bad);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("'mamba9'"), std::string::npos) << s.message();
}

// n_head * head_dim = 2^20 * 2^12 = 2^32 wraps an int32 q_dim to 0: before the 64-bit checks the schema
// asked for [0, n_embd] attention tensors and the forward pass would size its q scratch from
// the wrapped width. Refused from the metadata alone, naming the product.
TEST_F(LoadErrors, HyperParameterProductsAreCheckedIn64Bits) {
  const std::string bad = dir_ + "/heads.gguf";
  ASSERT_TRUE(rewrite_gguf(good_, bad, [](const std::string&, TensorEdit&) {},
                           [](GgufWriter& w) {
                             w.set_string("general.architecture", "qwen3");
                             w.set_u32("qwen3.attention.head_count", 1 << 20);
                             w.set_u32("qwen3.attention.head_count_kv", 1 << 20);
                             w.set_u32("qwen3.attention.key_length", 4096);
                             w.set_u32("qwen3.attention.value_length", 4096);
                           })
                  .ok());
  Status s = load_status(bad);
  EXPECT_EQ(s.code(), StatusCode::kInvalidFormat);
  EXPECT_NE(s.message().find("n_head * head_dim (q_dim) = 4294967296"), std::string::npos)
      << s.message();
}

TEST(ModelConfigBounds, EveryProductIsBounded) {
  ModelConfig c;
  c.arch = "llama";
  c.n_vocab = 32000, c.n_embd = 4096, c.n_layer = 2, c.n_head = 32, c.n_head_kv = 8;
  c.head_dim = 128, c.n_ff = 11008, c.max_ctx = 8192;
  c.layers.assign(2, LayerConfig{false, 0, 10000.0f, 128, 1.0f});
  ASSERT_TRUE(validate_config(c).ok()) << validate_config(c).message();
  auto refused = [](ModelConfig m, const char* what) {
    const Status s = validate_config(m);
    EXPECT_FALSE(s.ok()) << what;
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
  };
  ModelConfig m = c;
  m.n_head = m.n_head_kv = 1 << 16, m.head_dim = 1 << 12;  // 2^28 wide
  refused(m, "q_dim");
  m = c;
  m.n_vocab = 1 << 24, m.n_embd = 1 << 20;  // each within its own bound, product 2^44
  refused(m, "n_vocab * n_embd");
  m = c;
  m.max_ctx = int64_t{1} << 40;
  refused(m, "context_length");
  m = c;
  m.max_ctx = -5;
  refused(m, "negative");
  m = c;
  m.n_layer = 100000;
  m.layers.assign(100000, c.layers[0]);
  refused(m, "n_layer");
}

TEST_F(LoadErrors, UnknownHfModelTypeIsNamed) {
  const std::string hf = dir_ + "/hf";
  ASSERT_TRUE(write_random_model(tiny(), hf).ok());
  std::ifstream in(hf + "/config.json");
  nlohmann::json j = nlohmann::json::parse(in);
  j["model_type"] = "rwkv42";
  std::ofstream(hf + "/config.json") << j.dump();
  Status s = load_status(hf);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("'rwkv42'"), std::string::npos) << s.message();
}

TEST_F(LoadErrors, MissingHfConfigFieldIsNamed) {
  const std::string hf = dir_ + "/hf";
  ASSERT_TRUE(write_random_model(tiny(), hf).ok());
  std::ifstream in(hf + "/config.json");
  nlohmann::json j = nlohmann::json::parse(in);
  j.erase("intermediate_size");
  std::ofstream(hf + "/config.json") << j.dump();
  Status s = load_status(hf);
  EXPECT_NE(s.message().find("intermediate_size"), std::string::npos) << s.message();
}

TEST_F(LoadErrors, NotAModelFile) {
  const std::string junk = dir_ + "/junk.bin";
  std::ofstream(junk) << "definitely not a model";
  Status s = load_status(junk);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("junk.bin"), std::string::npos) << s.message();
  EXPECT_EQ(load_status(dir_ + "/nope.gguf").code(), StatusCode::kNotFound);
}

// One detect_model_format for the loader, the footprint reader and the CLI: the format by
// magic or by directory, and a Status naming the path for what is no model at all.
TEST_F(LoadErrors, DetectModelFormatTellsTheFormatsApart) {
  EXPECT_EQ(*detect_model_format(good_), ModelFormat::kGguf);
  ASSERT_TRUE(write_random_model(tiny(), dir_ + "/hf").ok());
  EXPECT_EQ(*detect_model_format(dir_ + "/hf"), ModelFormat::kHfDir);
  const std::string junk = dir_ + "/junk.bin";
  std::ofstream(junk) << "definitely not a model";
  EXPECT_EQ(*detect_model_format(junk), ModelFormat::kLlama2c);  // its reader names the fault
  EXPECT_STREQ(model_format_name(ModelFormat::kHfDir), "hf");
  auto footprint = read_model_footprint(dir_ + "/hf");
  ASSERT_TRUE(footprint.ok()) << footprint.status().to_string();
  EXPECT_EQ(footprint->format, "hf");
  Status missing = detect_model_format(dir_ + "/nope.gguf").status();
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("nope.gguf: no such file or directory"), std::string::npos)
      << missing.message();
  EXPECT_EQ(read_model_footprint(dir_ + "/nope.gguf").status().code(), StatusCode::kNotFound);
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Status special = detect_model_format(fifo).status();
  EXPECT_EQ(special.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(special.message().find("neither a file nor a directory"), std::string::npos)
      << special.message();
  EXPECT_EQ(load_status(fifo).code(), StatusCode::kInvalidArgument);
}

TEST_F(LoadErrors, TokenOutOfRangeAndContextOverflow) {
  auto m = load_or_die(good_);
  ASSERT_TRUE(m);
  auto st = InferenceState::create(*m, 8);
  ASSERT_TRUE(st.ok());
  std::vector<int32_t> bad = {1, 512};
  auto r = st->forward(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(r.status().message().find("token id 512"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("vocabulary size 512"), std::string::npos);
  std::vector<int32_t> neg = {-3};
  EXPECT_NE(st->forward(neg).status().message().find("token id -3"), std::string::npos);

  std::vector<int32_t> long_prompt(9, 5);
  r = st->forward(long_prompt);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(r.status().message().find("9 > 8"), std::string::npos) << r.status().message();
  // Errors leave the state usable: 6 fit, then 3 more do not (6 + 3 > 8), then 2 do.
  EXPECT_EQ(st->n_past(), 0);
  ASSERT_TRUE(st->forward(std::vector<int32_t>(6, 5)).ok());
  EXPECT_NE(st->forward(std::vector<int32_t>(3, 5)).status().message().find("9 > 8"), std::string::npos);
  EXPECT_TRUE(st->forward(std::vector<int32_t>(2, 5)).ok());
  EXPECT_EQ(st->n_past(), 8);
  EXPECT_FALSE(st->forward(std::vector<int32_t>()).ok());
  EXPECT_FALSE(InferenceState::create(*m, 0).ok());
}

TEST_F(LoadErrors, KvCacheIsSizedToTheRequestedContext) {
  // The model advertises 2048 positions; a state for 16 must not allocate for 2048.
  auto m = load_or_die(good_);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->config().max_ctx, 2048);
  auto st = InferenceState::create(*m, 16);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->n_ctx(), 16);
  EXPECT_EQ(st->kv_cache_bytes(), 2u * 2 * 16 * m->config().kv_dim() * sizeof(float));
  // An absurd context is refused with a Status, not an exception or a crash.
  auto huge = InferenceState::create(*m, int64_t{1} << 40);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace edge
