#include "formats/hf_config.h"

#include <gtest/gtest.h>

#include "formats/formats_test_util.h"

namespace edge {
namespace {

using testing_util::TempDir;
using testing_util::write_text;

void write_weights(const TempDir& dir) {
  static const float norm[4] = {1, 2, 3, 4};
  TensorView v;
  v.name = "model.norm.weight";
  v.dtype = DType::F32;
  v.shape = {4};
  v.data = reinterpret_cast<const uint8_t*>(norm);
  v.nbytes = sizeof(norm);
  ASSERT_TRUE(write_safetensors(dir.file("model.safetensors"), {v}, {{"format", "pt"}}).ok());
}

TEST(ReadJsonFile, ParsesAndReportsLineAndColumn) {
  TempDir dir;
  write_text(dir.file("ok.json"), R"({"a": [1, 2], "b": "x"})");
  auto ok = read_json_file(dir.file("ok.json"));
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ((*ok)["a"][1], 2);

  write_text(dir.file("bad.json"), "{\n  \"a\": 1,\n  \"b\": ]\n}\n");
  auto bad = read_json_file(dir.file("bad.json"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidFormat);
  const std::string msg = bad.status().message();
  EXPECT_NE(msg.find(dir.file("bad.json")), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;

  write_text(dir.file("empty.json"), "");
  EXPECT_FALSE(read_json_file(dir.file("empty.json")).ok());
  auto missing = read_json_file(dir.file("nope.json"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(HfModelDir, OpensACompleteDirectory) {
  TempDir dir;
  write_text(dir.file("config.json"), R"({"model_type": "llama", "hidden_size": 4})");
  write_text(dir.file("tokenizer.json"), R"({"model": {}})");
  write_text(dir.file("tokenizer_config.json"), R"({"bos_token": "<s>"})");
  write_weights(dir);
  auto m = HfModelDir::open(dir.path());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->dir, dir.path());
  EXPECT_EQ(m->config["model_type"], "llama");
  EXPECT_EQ(m->tokenizer_json_path, dir.file("tokenizer.json"));
  EXPECT_EQ(m->tokenizer_config_path, dir.file("tokenizer_config.json"));
  EXPECT_EQ(m->tokenizer_config["bos_token"], "<s>");
  EXPECT_TRUE(m->generation_config_path.empty());
  const TensorView* norm = m->weights.tensors().find("model.norm.weight");
  ASSERT_NE(norm, nullptr);
  float x;
  std::memcpy(&x, norm->data + 8, 4);
  EXPECT_EQ(x, 3.0f);
}

TEST(HfModelDir, OptionalFilesMayBeAbsent) {
  TempDir dir;
  write_text(dir.file("config.json"), R"({"model_type": "qwen3"})");
  write_text(dir.file("generation_config.json"), R"({"temperature": 0.6})");
  write_weights(dir);
  auto m = HfModelDir::open(dir.path());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_TRUE(m->tokenizer_json_path.empty());
  EXPECT_TRUE(m->tokenizer_config_path.empty());
  EXPECT_TRUE(m->tokenizer_config.is_null());
  EXPECT_EQ(m->generation_config_path, dir.file("generation_config.json"));
}

TEST(HfModelDir, ReportsWhatIsMissingOrBroken) {
  TempDir dir;
  auto no_config = HfModelDir::open(dir.path());
  ASSERT_FALSE(no_config.ok());
  EXPECT_NE(no_config.status().message().find("not a Hugging Face model directory: no config.json"),
            std::string::npos);

  auto not_dir = HfModelDir::open(dir.file("nothing"));
  ASSERT_FALSE(not_dir.ok());
  EXPECT_NE(not_dir.status().message().find("not a directory"), std::string::npos);

  write_text(dir.file("config.json"), R"({"model_type": "llama"})");
  auto no_weights = HfModelDir::open(dir.path());
  ASSERT_FALSE(no_weights.ok());
  EXPECT_NE(no_weights.status().message().find("model.safetensors"), std::string::npos)
      << no_weights.status().message();

  write_weights(dir);
  write_text(dir.file("tokenizer_config.json"), "{\"chat_template\": ");
  auto bad_tok = HfModelDir::open(dir.path());
  ASSERT_FALSE(bad_tok.ok());
  EXPECT_NE(bad_tok.status().message().find("tokenizer_config.json"), std::string::npos);

  write_text(dir.file("tokenizer_config.json"), "{}");
  write_text(dir.file("config.json"), "[1, 2]");
  auto arr = HfModelDir::open(dir.path());
  ASSERT_FALSE(arr.ok());
  EXPECT_NE(arr.status().message().find("expected a JSON object"), std::string::npos);
}

}  // namespace
}  // namespace edge
