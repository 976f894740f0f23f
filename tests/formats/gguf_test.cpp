// GGUF round trips (writer -> reader) and reading a real file from llama.cpp's converter.
#include "formats/gguf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "formats/formats_test_util.h"

namespace edge {
namespace {

using testing_util::TempDir;

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

GgufValue scalar(GgufValueType t, std::variant<int64_t, uint64_t, double, bool, std::string> s) {
  GgufValue v;
  v.type = t;
  v.scalar = std::move(s);
  return v;
}

GgufValue int_array(GgufValueType elem, std::vector<int64_t> ints) {
  GgufValue v;
  v.type = GgufValueType::ARRAY;
  v.elem_type = elem;
  v.ints = std::move(ints);
  return v;
}

// Every value type, through the typed setters and set_value.
void set_all_metadata(GgufWriter& w) {
  w.set_string("general.architecture", "llama");
  w.set_string("general.empty", "");
  w.set_bool("t.bool", true);
  w.set_u32("t.u32", 4000000000u);
  w.set_i32("t.i32", -123456);
  w.set_u64("t.u64", 0xfedcba9876543210ull);
  w.set_f32("t.f32", 0.125f);
  w.set_string_array("t.strs", {"<s>", "", "hello world", "\xe2\x96\x81x"});
  w.set_f32_array("t.f32s", {1.5f, -2.25f, 0.0f});
  w.set_i32_array("t.i32s", {-1, 0, 2147483647});
  w.set_u32_array("t.u32s", {0u, 4294967295u});
  w.set_value("t.u8", scalar(GgufValueType::UINT8, uint64_t{250}));
  w.set_value("t.i8", scalar(GgufValueType::INT8, int64_t{-100}));
  w.set_value("t.u16", scalar(GgufValueType::UINT16, uint64_t{65000}));
  w.set_value("t.i16", scalar(GgufValueType::INT16, int64_t{-32000}));
  w.set_value("t.i64", scalar(GgufValueType::INT64, int64_t{-(1ll << 60)}));
  w.set_value("t.f64", scalar(GgufValueType::FLOAT64, 3.141592653589793));
  w.set_value("t.bools", int_array(GgufValueType::BOOL, {1, 0, 1}));
  w.set_value("t.i8s", int_array(GgufValueType::INT8, {-128, 127}));
  w.set_value("t.u64s", int_array(GgufValueType::UINT64, {static_cast<int64_t>(~0ull), 5}));
  GgufValue f64s;
  f64s.type = GgufValueType::ARRAY;
  f64s.elem_type = GgufValueType::FLOAT64;
  f64s.floats = {1e300, -0.5};
  w.set_value("t.f64s", f64s);
  w.set_value("t.empty_strs", [] {
    GgufValue v;
    v.type = GgufValueType::ARRAY;
    v.elem_type = GgufValueType::STRING;
    return v;
  }());
}

void expect_all_metadata(const GgufFile& f) {
  EXPECT_EQ(*f.get_string("general.architecture"), "llama");
  EXPECT_EQ(*f.get_string("general.empty"), "");
  EXPECT_TRUE(*f.get_bool("t.bool"));
  EXPECT_EQ(*f.get_int("t.u32"), 4000000000ll);
  EXPECT_EQ(*f.get_int("t.i32"), -123456);
  EXPECT_EQ(std::get<uint64_t>(f.find("t.u64")->scalar), 0xfedcba9876543210ull);
  EXPECT_EQ(*f.get_float("t.f32"), 0.125);
  EXPECT_EQ(*f.get_string_array("t.strs"),
            (std::vector<std::string>{"<s>", "", "hello world", "\xe2\x96\x81x"}));
  EXPECT_EQ(*f.get_float_array("t.f32s"), (std::vector<double>{1.5, -2.25, 0.0}));
  EXPECT_EQ(*f.get_int_array("t.i32s"), (std::vector<int64_t>{-1, 0, 2147483647}));
  EXPECT_EQ(*f.get_int_array("t.u32s"), (std::vector<int64_t>{0, 4294967295ll}));
  EXPECT_EQ(*f.get_int("t.u8"), 250);
  EXPECT_EQ(*f.get_int("t.i8"), -100);
  EXPECT_EQ(*f.get_int("t.u16"), 65000);
  EXPECT_EQ(*f.get_int("t.i16"), -32000);
  EXPECT_EQ(*f.get_int("t.i64"), -(1ll << 60));
  EXPECT_EQ(*f.get_float("t.f64"), 3.141592653589793);
  EXPECT_EQ(*f.get_int_array("t.bools"), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(*f.get_int_array("t.i8s"), (std::vector<int64_t>{-128, 127}));
  EXPECT_EQ(f.get_int_array("t.u64s")->at(0), static_cast<int64_t>(~0ull));
  EXPECT_EQ(f.get_float_array("t.u64s")->at(0), 18446744073709551615.0);
  EXPECT_EQ(*f.get_float_array("t.f64s"), (std::vector<double>{1e300, -0.5}));
  EXPECT_TRUE(f.get_string_array("t.empty_strs")->empty());
  // On-disk types survive the round trip.
  EXPECT_EQ(f.find("t.u8")->type, GgufValueType::UINT8);
  EXPECT_EQ(f.find("t.i16")->type, GgufValueType::INT16);
  EXPECT_EQ(f.find("t.f32")->type, GgufValueType::FLOAT32);
  EXPECT_EQ(f.find("t.f64s")->elem_type, GgufValueType::FLOAT64);
  EXPECT_EQ(f.find("t.bools")->elem_type, GgufValueType::BOOL);
}

TEST(Gguf, RoundTripsEveryValueTypeAndTensors) {
  TempDir dir;
  const std::string path = dir.file("rt.gguf");
  const auto f32 = pattern(2 * 3 * 4, 1);    // F32 [2, 3]
  const auto q40 = pattern(2 * 2 * 18, 9);   // Q4_0 [2, 64]: 2 blocks per row
  const auto i8 = pattern(5, 3);             // I8 [5]: odd size, exercises padding
  const auto q4k = pattern(144, 77);         // Q4_K [256]
  GgufWriter w;
  set_all_metadata(w);
  ASSERT_TRUE(w.add_tensor("a.f32", DType::F32, {2, 3}, f32.data(), f32.size()).ok());
  ASSERT_TRUE(w.add_tensor("b.q4_0", DType::Q4_0, {2, 64}, q40.data(), q40.size()).ok());
  ASSERT_TRUE(w.add_tensor("c.i8", DType::I8, {5}, i8.data(), i8.size()).ok());
  ASSERT_TRUE(w.add_tensor("d.q4k", DType::Q4_K, {1, 1, 1, 256},
                           [&](uint8_t* dst, uint64_t n) -> Status {
                             EXPECT_EQ(n, q4k.size());
                             std::memcpy(dst, q4k.data(), n);
                             return {};
                           }).ok());
  Status ws = w.write(path);
  ASSERT_TRUE(ws.ok()) << ws.to_string();
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->data_offset() % 32, 0u);
  expect_all_metadata(*f);

  const TensorSet& ts = f->tensors();
  ASSERT_EQ(ts.size(), 4u);
  EXPECT_EQ(ts.all()[0].name, "a.f32");
  struct Want { const char* name; DType t; std::vector<int64_t> shape; const std::vector<uint8_t>* bytes; };
  const Want wants[] = {{"a.f32", DType::F32, {2, 3}, &f32},
                        {"b.q4_0", DType::Q4_0, {2, 64}, &q40},
                        {"c.i8", DType::I8, {5}, &i8},
                        {"d.q4k", DType::Q4_K, {1, 1, 1, 256}, &q4k}};
  for (const Want& want : wants) {
    const TensorView* v = ts.find(want.name);
    ASSERT_NE(v, nullptr) << want.name;
    EXPECT_EQ(v->dtype, want.t);
    EXPECT_EQ(v->shape, want.shape) << want.name;
    ASSERT_EQ(v->nbytes, want.bytes->size());
    EXPECT_EQ(std::memcmp(v->data, want.bytes->data(), v->nbytes), 0) << want.name;
    EXPECT_EQ((v->data - f->mapped().data()) % 32, 0) << want.name << " not aligned";
  }
}

TEST(Gguf, CustomAlignmentIsRecordedAndHonoured) {
  TempDir dir;
  const std::string path = dir.file("al.gguf");
  const auto a = pattern(12, 0), b = pattern(8, 5);
  GgufWriter w;
  ASSERT_TRUE(w.add_tensor("a", DType::F32, {3}, a.data(), a.size()).ok());
  ASSERT_TRUE(w.add_tensor("b", DType::F16, {4}, b.data(), b.size()).ok());
  ASSERT_TRUE(w.write(path, 128).ok());
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->alignment(), 128u);
  EXPECT_EQ(*f->get_int("general.alignment"), 128);
  for (const TensorView& v : f->tensors().all())
    EXPECT_EQ((v.data - f->mapped().data()) % 128, 0) << v.name;
  EXPECT_EQ(std::memcmp(f->tensors().find("b")->data, b.data(), b.size()), 0);

  GgufWriter bad;
  bad.set_u32("general.alignment", 64);
  Status st = bad.write(dir.file("bad.gguf"), 128);
  EXPECT_FALSE(st.ok());
  EXPECT_FALSE(GgufWriter().write(dir.file("bad2.gguf"), 48).ok());
}

TEST(Gguf, ProducersRunOneAtATimeInOrderAndErrorsLeaveNoFile) {
  TempDir dir;
  std::vector<std::string> calls;
  GgufWriter w;
  for (const char* name : {"x", "y", "z"}) {
    ASSERT_TRUE(w.add_tensor(name, DType::F32, {4}, [&calls, name](uint8_t* dst, uint64_t n) {
                   calls.push_back(name);
                   std::memset(dst, name[0], n);
                   return Status();
                 }).ok());
  }
  ASSERT_TRUE(w.write(dir.file("ok.gguf")).ok());
  EXPECT_EQ(calls, (std::vector<std::string>{"x", "y", "z"}));
  auto f = GgufFile::open(dir.file("ok.gguf"));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->tensors().find("y")->data[15], 'y');

  GgufWriter failing;
  ASSERT_TRUE(failing.add_tensor("boom", DType::F32, {2}, [](uint8_t*, uint64_t) {
                       return Status::internal("source went away");
                     }).ok());
  const std::string path = dir.file("fail.gguf");
  Status st = failing.write(path);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("boom"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("source went away"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(Gguf, WriterRejectsBadTensors) {
  GgufWriter w;
  std::vector<uint8_t> buf(64);
  EXPECT_FALSE(w.add_tensor("q", DType::Q4_0, {2, 33}, buf.data(), buf.size()).ok());  // 33 % 32
  EXPECT_FALSE(w.add_tensor("f", DType::F32, {4}, buf.data(), 15).ok());             // size
  EXPECT_FALSE(w.add_tensor("", DType::F32, {4}, buf.data(), 16).ok());
  EXPECT_FALSE(w.add_tensor("d5", DType::F32, {1, 1, 1, 1, 4}, buf.data(), 16).ok());
  EXPECT_FALSE(w.add_tensor("u", static_cast<DType>(5), {4}, buf.data(), 16).ok());
  ASSERT_TRUE(w.add_tensor("ok", DType::F32, {4}, buf.data(), 16).ok());
  EXPECT_FALSE(w.add_tensor("ok", DType::F32, {4}, buf.data(), 16).ok());
}

TEST(Gguf, PackedTypesUseAResolverOnReadAndAStatedSizeOnWrite) {
  TempDir dir;
  const std::string path = dir.file("packed.gguf");
  const DType packed = static_cast<DType>(kFirstPackedType + 3);
  const auto bytes = pattern(2 * 40, 4);  // [2, 64] in a made-up 64-element / 40-byte block
  GgufWriter w;
  w.set_string("edge.packed", "test");
  ASSERT_TRUE(w.add_tensor_sized("p", packed, {2, 64}, bytes.size(), [&](uint8_t* d, uint64_t n) {
                 std::memcpy(d, bytes.data(), n);
                 return Status();
               }).ok());
  ASSERT_TRUE(w.write(path).ok());
  auto plain = GgufFile::open(path);
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.status().message().find("'p'"), std::string::npos);
  GgufTypeResolver resolver = [](uint32_t id, int64_t* be, int64_t* bb) {
    if (id != kFirstPackedType + 3) return false;
    *be = 64;
    *bb = 40;
    return true;
  };
  auto f = GgufFile::open(path, resolver);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const TensorView* v = f->tensors().find("p");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->dtype, packed);
  EXPECT_EQ(v->nbytes, bytes.size());
  EXPECT_EQ(std::memcmp(v->data, bytes.data(), bytes.size()), 0);
}

TEST(Gguf, CopyingMetadataThroughSetValueRoundTrips) {
  TempDir dir;
  GgufWriter w;
  set_all_metadata(w);
  ASSERT_TRUE(w.write(dir.file("a.gguf")).ok());
  auto a = GgufFile::open(dir.file("a.gguf"));
  ASSERT_TRUE(a.ok());
  GgufWriter copy;
  for (const auto& [k, v] : a->metadata()) copy.set_value(k, v);
  ASSERT_TRUE(copy.write(dir.file("b.gguf")).ok());
  auto b = GgufFile::open(dir.file("b.gguf"));
  ASSERT_TRUE(b.ok());
  expect_all_metadata(*b);
  EXPECT_EQ(testing_util::read_bytes(dir.file("a.gguf")),
            testing_util::read_bytes(dir.file("b.gguf")));
}

TEST(Gguf, TypedGettersReportMissingAndMismatchedKeys) {
  TempDir dir;
  GgufWriter w;
  set_all_metadata(w);
  ASSERT_TRUE(w.write(dir.file("g.gguf")).ok());
  auto f = GgufFile::open(dir.file("g.gguf"));
  ASSERT_TRUE(f.ok());
  auto missing = f->get_int("no.such.key");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no.such.key"), std::string::npos);
  auto wrong = f->get_int("general.architecture");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidFormat);
  EXPECT_NE(wrong.status().message().find("string"), std::string::npos);
  EXPECT_FALSE(f->get_int("t.u64").ok());  // does not fit int64
  EXPECT_EQ(*f->get_float("t.i32"), -123456.0);  // integers widen to double
  EXPECT_FALSE(f->get_bool("t.u8").ok());
  EXPECT_FALSE(f->get_string_array("t.i32s").ok());
  EXPECT_FALSE(f->get_int_array("t.f32s").ok());
  EXPECT_EQ(f->get_string_or("nope", "dflt"), "dflt");
  EXPECT_EQ(f->get_int_or("t.i32", 7), -123456);
  EXPECT_EQ(f->get_int_or("general.architecture", 7), 7);
  EXPECT_EQ(f->get_float_or("nope", 2.5), 2.5);
  EXPECT_TRUE(f->get_bool_or("nope", true));
}

TEST(Gguf, SettingAKeyTwiceReplacesItInPlace) {
  TempDir dir;
  GgufWriter w;
  w.set_u32("a", 1);
  w.set_string("b", "x");
  w.set_string("a", "now a string");
  ASSERT_TRUE(w.write(dir.file("r.gguf")).ok());
  auto f = GgufFile::open(dir.file("r.gguf"));
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->metadata().size(), 2u);
  EXPECT_EQ(f->metadata()[0].first, "a");
  EXPECT_EQ(*f->get_string("a"), "now a string");
}

TEST(Gguf, ViewsSurviveMovingTheFile) {
  TempDir dir;
  const auto a = pattern(16, 2);
  GgufWriter w;
  ASSERT_TRUE(w.add_tensor("a", DType::F32, {4}, a.data(), a.size()).ok());
  ASSERT_TRUE(w.write(dir.file("m.gguf")).ok());
  auto f = GgufFile::open(dir.file("m.gguf"));
  ASSERT_TRUE(f.ok());
  GgufFile moved = std::move(f).value();
  GgufFile moved_again = std::move(moved);
  EXPECT_EQ(std::memcmp(moved_again.tensors().find("a")->data, a.data(), a.size()), 0);
}

TEST(Gguf, ReadsVersion2AndSkipsNestedArrays) {
  // Hand-made v2 file: a nested array [[1,2],[3]] of int32, then a string key after it, and
  // one F32 tensor [2] at offset 0.
  testing_util::Bytes b;
  b.u32(0x46554747).u32(2).u64(1).u64(2);
  b.str("nested").u32(9).u32(9).u64(2);
  b.u32(5).u64(2).i32(1).i32(2);
  b.u32(5).u64(1).i32(3);
  b.str("after").u32(8).str("still here");
  b.str("t").u32(1).u64(2).u32(0).u64(0);
  b.pad_to(32).put<float>(1.5f).put<float>(-2.0f);
  TempDir dir;
  testing_util::write_bytes(dir.file("v2.gguf"), b.data);
  auto f = GgufFile::open(dir.file("v2.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 2u);
  EXPECT_EQ(f->find("nested")->elem_type, GgufValueType::ARRAY);
  EXPECT_EQ(*f->get_string("after"), "still here");
  float x[2];
  std::memcpy(x, f->tensors().find("t")->data, 8);
  EXPECT_EQ(x[0], 1.5f);
  EXPECT_EQ(x[1], -2.0f);
}

TEST(Gguf, ReadsARealVocabFileFromLlamaCpp) {
  const std::string path = std::string(EDGE_TEST_DATA) + "/tokenizer/ggml-vocab-llama-spm.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not present";
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(*f->get_string("general.architecture"), "llama");
  auto tokens = f->get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.status().to_string();
  ASSERT_EQ(tokens->size(), 32000u);
  EXPECT_EQ((*tokens)[1], "<s>");
  EXPECT_EQ(f->get_float_array("tokenizer.ggml.scores")->size(), 32000u);
  EXPECT_EQ(f->get_int_array("tokenizer.ggml.token_type")->size(), 32000u);
  EXPECT_EQ(f->tensors().size(), 0u);
}

}  // namespace
}  // namespace edge
