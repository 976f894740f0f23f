// Safetensors: round trips (single file, directory, shards) and malformed files.
#include "formats/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/half.h"
#include "formats/formats_test_util.h"

namespace edge {
namespace {

using testing_util::Bytes;
using testing_util::TempDir;

// Owns the bytes the views point at.
struct Fixture {
  std::vector<std::vector<uint8_t>> store;
  std::vector<TensorView> views;

  void add(const std::string& name, DType t, std::vector<int64_t> shape, uint8_t seed) {
    TensorView v;
    v.name = name;
    v.dtype = t;
    v.shape = std::move(shape);
    v.nbytes = *dtype_row_bytes(t, v.numel());
    std::vector<uint8_t> bytes(v.nbytes);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(seed * 31 + i);
    store.push_back(std::move(bytes));
    v.data = store.back().data();
    views.push_back(std::move(v));
  }
  static Fixture all_dtypes() {
    Fixture f;
    f.store.reserve(16);
    f.add("model.embed_tokens.weight", DType::BF16, {8, 4}, 1);
    f.add("model.norm.weight", DType::F32, {4}, 2);
    f.add("lm_head.weight", DType::F16, {8, 4}, 3);
    f.add("ids.i32", DType::I32, {3}, 4);
    f.add("ids.i64", DType::I64, {2, 1}, 5);
    f.add("mask.i8", DType::I8, {7}, 6);  // odd size: later tensors start unaligned
    f.add("scalar.f32", DType::F32, {}, 7);
    f.add("empty.f32", DType::F32, {0, 4}, 8);
    return f;
  }
};

void expect_same(const TensorSet& got, const std::vector<TensorView>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const TensorView& w : want) {
    const TensorView* g = got.find(w.name);
    ASSERT_NE(g, nullptr) << w.name;
    EXPECT_EQ(g->dtype, w.dtype) << w.name;
    EXPECT_EQ(g->shape, w.shape) << w.name;
    ASSERT_EQ(g->nbytes, w.nbytes) << w.name;
    if (w.nbytes) EXPECT_EQ(std::memcmp(g->data, w.data, w.nbytes), 0) << w.name;
  }
}

TEST(Safetensors, SingleFileRoundTrip) {
  TempDir dir;
  Fixture fx = Fixture::all_dtypes();
  const std::string path = dir.file("x.safetensors");
  Status st = write_safetensors(path, fx.views, {{"format", "pt"}, {"note", "hi"}});
  ASSERT_TRUE(st.ok()) << st.to_string();
  auto m = SafetensorsModel::open(path);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  expect_same(m->tensors(), fx.views);
  EXPECT_EQ(m->metadata().at("format"), "pt");
  EXPECT_EQ(m->metadata().at("note"), "hi");
  EXPECT_EQ(m->num_files(), 1u);
  // Views come in file order, which is the order written.
  EXPECT_EQ(m->tensors().all()[0].name, "model.embed_tokens.weight");
  // The header is padded so the data buffer starts 8-byte aligned.
  uint64_t n = 0;
  std::memcpy(&n, testing_util::read_bytes(path).data(), 8);
  EXPECT_EQ(n % 8, 0u);
}

TEST(Safetensors, DecodesValuesWrittenByHand) {
  // A header as another tool would write it (no padding, keys unordered), BF16 values.
  const std::string header =
      R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},)"
      R"("a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})";
  Bytes b;
  b.u64(header.size()).raw({header.begin(), header.end()});
  b.put<uint16_t>(f32_to_bf16(1.5f)).put<uint16_t>(f32_to_bf16(-3.0f));
  b.put<float>(0.25f).put<float>(7.0f);
  TempDir dir;
  testing_util::write_bytes(dir.file("h.safetensors"), b.data);
  auto m = SafetensorsModel::open(dir.file("h.safetensors"));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  ASSERT_EQ(m->tensors().all()[0].name, "a");  // file order, not header order
  uint16_t h[2];
  std::memcpy(h, m->tensors().find("a")->data, 4);
  EXPECT_EQ(bf16_to_f32(h[0]), 1.5f);
  EXPECT_EQ(bf16_to_f32(h[1]), -3.0f);
  float f[2];
  std::memcpy(f, m->tensors().find("b")->data, 8);
  EXPECT_EQ(f[1], 7.0f);
  EXPECT_TRUE(m->metadata().empty());
}

TEST(Safetensors, DirectoryWithModelSafetensors) {
  TempDir dir;
  Fixture fx = Fixture::all_dtypes();
  ASSERT_TRUE(write_safetensors(dir.file("model.safetensors"), fx.views, {}).ok());
  auto m = SafetensorsModel::open(dir.path());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  expect_same(m->tensors(), fx.views);
}

TEST(Safetensors, ShardedRoundTripAndViewsSurviveMoves) {
  TempDir dir;
  Fixture fx = Fixture::all_dtypes();
  // 100-byte shards: [embed 64 + norm 16], [lm_head 64 + i32 12 + i64 16 + i8 7], [scalar, empty]
  ASSERT_TRUE(write_safetensors_sharded(dir.path(), fx.views, 100, {{"format", "pt"}}).ok());
  EXPECT_TRUE(std::filesystem::exists(dir.file("model-00001-of-00003.safetensors")));
  EXPECT_TRUE(std::filesystem::exists(dir.file("model-00003-of-00003.safetensors")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("model-00004-of-00004.safetensors")));
  auto index = nlohmann::json::parse(
      testing_util::read_bytes(dir.file("model.safetensors.index.json")));
  EXPECT_EQ(index["weight_map"]["lm_head.weight"], "model-00002-of-00003.safetensors");
  auto m = SafetensorsModel::open(dir.path());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->num_files(), 3u);
  EXPECT_EQ(m->metadata().at("format"), "pt");
  SafetensorsModel moved = std::move(m).value();
  SafetensorsModel again = std::move(moved);
  expect_same(again.tensors(), fx.views);
}

TEST(Safetensors, MissingShardIsNamed) {
  TempDir dir;
  Fixture fx = Fixture::all_dtypes();
  ASSERT_TRUE(write_safetensors_sharded(dir.path(), fx.views, 100).ok());
  std::filesystem::remove(dir.file("model-00002-of-00003.safetensors"));
  auto m = SafetensorsModel::open(dir.path());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_NE(m.status().message().find("model-00002-of-00003.safetensors"), std::string::npos)
      << m.status().message();
}

TEST(Safetensors, IndexProblems) {
  TempDir dir;
  Fixture fx;
  fx.add("a", DType::F32, {2}, 1);
  fx.add("b", DType::F32, {2}, 2);
  ASSERT_TRUE(write_safetensors_sharded(dir.path(), fx.views, 8).ok());
  const std::string index = dir.file("model.safetensors.index.json");
  auto expect_fail = [&](const std::string& text, const char* part) {
    testing_util::write_text(index, text);
    auto m = SafetensorsModel::open(dir.path());
    ASSERT_FALSE(m.ok()) << text;
    EXPECT_NE(m.status().message().find(part), std::string::npos) << m.status().message();
  };
  // "a" is listed in the shard that does not hold it.
  expect_fail(R"({"weight_map":{"a":"model-00002-of-00002.safetensors",)"
              R"("b":"model-00002-of-00002.safetensors"}})",
              "'a' is listed in model-00002-of-00002.safetensors");
  expect_fail(R"({"weight_map":{"a":"../../etc/passwd"}})", "not a file name");
  expect_fail(R"({"metadata":{}})", "weight_map");
  expect_fail(R"({"weight_map":{"a": )", "bad JSON");
  expect_fail(R"({"weight_map":{"c":"model-00001-of-00002.safetensors"}})", "'c'");
}

TEST(Safetensors, NoWeightsInDirectory) {
  TempDir dir;
  auto m = SafetensorsModel::open(dir.path());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("no model.safetensors"), std::string::npos);
  auto missing = SafetensorsModel::open(dir.file("nope.safetensors"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// A file with the given header text and `data` bytes of buffer.
std::vector<uint8_t> with_header(const std::string& header, size_t data) {
  Bytes b;
  b.u64(header.size()).raw({header.begin(), header.end()}).zeros(data);
  return b.data;
}

void expect_bad(const std::vector<uint8_t>& bytes, std::initializer_list<const char*> parts,
                StatusCode code = StatusCode::kInvalidFormat) {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  testing_util::write_bytes(path, bytes);
  auto m = SafetensorsModel::open(path);
  ASSERT_FALSE(m.ok());
  const std::string msg = m.status().message();
  EXPECT_EQ(m.status().code(), code) << msg;
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << p << " in " << msg;
}

TEST(SafetensorsBadInput, HeaderLength) {
  expect_bad({1, 2, 3}, {"too small"});
  Bytes b;
  b.u64(1000).zeros(10);
  expect_bad(b.data, {"header length 1000"});
  Bytes huge;
  huge.u64(~0ull).zeros(10);
  expect_bad(huge.data, {"header length"});
}

TEST(SafetensorsBadInput, HeaderJson) {
  expect_bad(with_header(R"({"a":{"dtype":"F32",)", 0), {"bad JSON"});
  expect_bad(with_header(R"([1,2])", 0), {"not a JSON object"});
  expect_bad(with_header(R"({"a":3})", 0), {"'a'", "not an object"});
  expect_bad(with_header(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", 4), {"'a'", "dtype"});
  expect_bad(with_header(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", 4), {"'a'", "shape"});
  expect_bad(with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4),
             {"'a'", "data_offsets"});
  expect_bad(with_header(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
             {"'a'", "shape"});
  expect_bad(with_header(R"({"__metadata__":[1]})", 0), {"__metadata__"});
}

TEST(SafetensorsBadInput, UnsupportedDtypeNamesTheTensor) {
  // U8 is read (GPT-OSS's MXFP4 blocks); U16 is not.
  expect_bad(with_header(R"({"q.weight":{"dtype":"U16","shape":[4],"data_offsets":[0,8]}})", 8),
             {"'q.weight'", "U16"}, StatusCode::kUnsupported);
  expect_bad(with_header(R"({"f8":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[0,4]}})", 4),
             {"'f8'", "F8_E4M3"}, StatusCode::kUnsupported);
}

TEST(SafetensorsBadInput, OffsetsOutOfBoundsOrInconsistent) {
  expect_bad(with_header(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 12),
             {"'w'", "[0, 16)", "12 bytes"});
  expect_bad(with_header(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[8,4]}})", 16),
             {"'w'", "outside"});
  expect_bad(with_header(R"({"w":{"dtype":"F16","shape":[4],"data_offsets":[0,16]}})", 16),
             {"'w'", "needs 8 bytes", "span 16"});
  expect_bad(with_header(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],)"
                         R"("data_offsets":[0,16]}})", 16),
             {"'w'"});
  // Overlapping ranges inside the buffer are allowed.
  TempDir dir;
  testing_util::write_bytes(
      dir.file("ov.safetensors"),
      with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                  R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12));
  EXPECT_TRUE(SafetensorsModel::open(dir.file("ov.safetensors")).ok());
}

TEST(SafetensorsBadInput, TruncationAtEveryByteIsReported) {
  TempDir dir;
  Fixture fx = Fixture::all_dtypes();
  ASSERT_TRUE(write_safetensors(dir.file("full.safetensors"), fx.views, {{"a", "b"}}).ok());
  const auto full = testing_util::read_bytes(dir.file("full.safetensors"));
  for (size_t cut = 0; cut < full.size(); ++cut) {
    testing_util::write_bytes(dir.file("cut.safetensors"),
                              std::vector<uint8_t>(full.begin(), full.begin() + cut));
    auto m = SafetensorsModel::open(dir.file("cut.safetensors"));
    ASSERT_FALSE(m.ok()) << "cut at " << cut;
    EXPECT_NE(m.status().message().find("cut.safetensors"), std::string::npos);
  }
}

TEST(SafetensorsWriter, RejectsInconsistentViews) {
  TempDir dir;
  Fixture fx;
  fx.add("w", DType::F32, {4}, 1);
  fx.views[0].nbytes = 12;
  Status st = write_safetensors(dir.file("w.safetensors"), fx.views, {});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("needs 16 bytes"), std::string::npos) << st.message();
  fx.views[0].nbytes = 16;
  fx.views[0].dtype = DType::Q4_0;
  EXPECT_FALSE(write_safetensors(dir.file("w.safetensors"), fx.views, {}).ok());
  fx.views[0].dtype = DType::F32;
  fx.views.push_back(fx.views[0]);
  st = write_safetensors(dir.file("w.safetensors"), fx.views, {});
  EXPECT_NE(st.message().find("duplicate"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.file("w.safetensors")));
}

}  // namespace
}  // namespace edge
