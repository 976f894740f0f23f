// Corrupt, truncated and hostile GGUF files: each must give a non-ok Status that names the
// file and the problem (never a crash, a huge allocation or a read past the mapping).
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "formats/formats_test_util.h"
#include "formats/gguf.h"
#include "fuzz/regression_input.h"

namespace edge {
namespace {

using testing_util::Bytes;
using testing_util::TempDir;

constexpr uint32_t kMagic = 0x46554747;
constexpr uint32_t kF32 = 0, kQ4_0 = 2;

Expected<GgufFile> open_bytes(const TempDir& dir, const std::vector<uint8_t>& bytes,
                              const std::string& name = "bad.gguf") {
  const std::string path = dir.file(name);
  testing_util::write_bytes(path, bytes);
  return GgufFile::open(path);
}

// Expects failure with a message naming the file and containing every `parts`.
void expect_error(const std::vector<uint8_t>& bytes, std::initializer_list<const char*> parts,
                  StatusCode code = StatusCode::kInvalidFormat) {
  TempDir dir;
  auto f = open_bytes(dir, bytes);
  ASSERT_FALSE(f.ok()) << "opened a bad file";
  const std::string msg = f.status().message();
  EXPECT_EQ(f.status().code(), code) << msg;
  EXPECT_NE(msg.find(dir.file("bad.gguf")), std::string::npos) << "no path in: " << msg;
  for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << p << " not in: " << msg;
}

// Header with n_kv = 0, then one tensor info, padding and `data_bytes` of data.
Bytes one_tensor(const std::string& name, const std::vector<uint64_t>& ne, uint32_t type,
                 uint64_t offset, size_t data_bytes) {
  Bytes b;
  b.u32(kMagic).u32(3).u64(1).u64(0);
  b.str(name).u32(static_cast<uint32_t>(ne.size()));
  for (uint64_t d : ne) b.u64(d);
  b.u32(type).u64(offset);
  b.pad_to(32).zeros(data_bytes);
  return b;
}

TEST(GgufBadInput, MinimalHandMadeFileIsValid) {
  // Guards the builders below: the unmodified file opens, so each test's failure comes from
  // its one change.
  TempDir dir;
  auto f = open_bytes(dir, one_tensor("w", {8, 2}, kF32, 0, 64).data);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->tensors().find("w")->shape, (std::vector<int64_t>{2, 8}));
}

TEST(GgufBadInput, ZeroLastDimensionGivesRowsWithoutDividingByZero) {
  // Found by fuzz_gguf: a tensor whose innermost dim is 0 is a valid empty tensor, but
  // TensorView::rows() computed numel() / cols() and divided by that zero (SIGFPE).
  TempDir dir;
  auto f = open_bytes(dir, one_tensor("w", {0, 3}, kF32, 0, 0).data);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const TensorView* w = f->tensors().find("w");
  EXPECT_EQ(w->shape, (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(w->rows(), 3);
  EXPECT_EQ(w->cols(), 0);
  EXPECT_EQ(w->numel(), 0);
  const auto bytes = testing_util::fuzz_regression("gguf", "zero_last_dim_rows.gguf");
  auto repro = GgufFile::from_mapped(MappedFile::copy_of("repro.gguf", bytes.data(), bytes.size()));
  ASSERT_TRUE(repro.ok()) << repro.status().to_string();
  int zero_cols = 0;
  for (const TensorView& v : repro->tensors().all()) {
    if (v.cols() != 0) continue;
    ++zero_cols;
    EXPECT_EQ(v.numel(), 0) << v.name;
    EXPECT_GE(v.rows(), 0) << v.name;
  }
  EXPECT_GT(zero_cols, 0) << "the reproducer no longer has a tensor with a zero last dim";
}

TEST(GgufBadInput, TruncationAtEveryByteIsReported) {
  TempDir dir;
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string_array("tok", {"a", "bc", ""});
  w.set_f32_array("scores", {1, 2, 3});
  w.set_u32("n", 7);
  std::vector<uint8_t> a(64, 1), b(18 * 2, 2);
  ASSERT_TRUE(w.add_tensor("a", DType::F32, {4, 4}, a.data(), a.size()).ok());
  ASSERT_TRUE(w.add_tensor("b", DType::Q4_0, {2, 32}, b.data(), b.size()).ok());
  ASSERT_TRUE(w.write(dir.file("full.gguf")).ok());
  const auto full = testing_util::read_bytes(dir.file("full.gguf"));
  auto ref = GgufFile::open(dir.file("full.gguf"));
  ASSERT_TRUE(ref.ok());
  const TensorView* last = ref->tensors().find("b");
  const size_t data_end = static_cast<size_t>(last->data - ref->mapped().data()) + last->nbytes;
  ASSERT_LE(data_end, full.size());
  for (size_t cut = 0; cut < full.size(); ++cut) {
    std::vector<uint8_t> part(full.begin(), full.begin() + cut);
    auto f = open_bytes(dir, part, "cut.gguf");
    if (cut < data_end) {
      ASSERT_FALSE(f.ok()) << "truncated at " << cut << " of " << full.size() << " opened";
      EXPECT_NE(f.status().message().find("cut.gguf"), std::string::npos);
    } else {
      // Only the padding after the last tensor is missing: nothing is lost.
      EXPECT_TRUE(f.ok()) << cut << ": " << f.status().to_string();
    }
  }
}

TEST(GgufBadInput, BadMagic) {
  Bytes b = one_tensor("w", {8}, kF32, 0, 32);
  std::memcpy(b.data.data(), "GGML", 4);
  expect_error(b.data, {"bad magic"});
  expect_error({}, {"no magic"});
  expect_error({'G', 'G', 'U'}, {"no magic"});
}

TEST(GgufBadInput, UnsupportedVersions) {
  Bytes v1;
  v1.u32(kMagic).u32(1).u32(0).u32(0);
  expect_error(v1.data, {"version 1"}, StatusCode::kUnsupported);
  Bytes v4;
  v4.u32(kMagic).u32(4).u64(0).u64(0);
  expect_error(v4.data, {"version 4"}, StatusCode::kUnsupported);
  Bytes be;
  be.u32(kMagic).u32(0x03000000).u64(0).u64(0);
  expect_error(be.data, {"big-endian"}, StatusCode::kUnsupported);
}

TEST(GgufBadInput, AbsurdCounts) {
  Bytes t;
  t.u32(kMagic).u32(3).u64(1ull << 40).u64(0).zeros(64);
  expect_error(t.data, {"tensor count 1099511627776"});
  Bytes k;
  k.u32(kMagic).u32(3).u64(0).u64(std::numeric_limits<uint64_t>::max()).zeros(64);
  expect_error(k.data, {"metadata count"});
}

TEST(GgufBadInput, StringLengthsPastTheEnd) {
  Bytes key;
  key.u32(kMagic).u32(3).u64(0).u64(1).u64(1ull << 50).zeros(16);
  expect_error(key.data, {"metadata key #0", "past the end"});
  Bytes val;
  val.u32(kMagic).u32(3).u64(0).u64(1).str("general.name").u32(8).u64(1000).zeros(8);
  expect_error(val.data, {"general.name", "past the end"});
  Bytes arr;
  arr.u32(kMagic).u32(3).u64(0).u64(1).str("toks").u32(9).u32(8).u64(2).str("ok").u64(99);
  expect_error(arr.data, {"element 1 of 'toks'"});
  Bytes name;
  name.u32(kMagic).u32(3).u64(1).u64(0).u64(~0ull).zeros(24);
  expect_error(name.data, {"name of tensor #0"});
}

TEST(GgufBadInput, HugeArrayCount) {
  Bytes b;
  b.u32(kMagic).u32(3).u64(0).u64(1).str("big").u32(9).u32(4).u64(1ull << 61).zeros(16);
  expect_error(b.data, {"'big'", "claims 2305843009213693952 uint32"});
}

TEST(GgufBadInput, UnknownValueTypes) {
  Bytes b;
  b.u32(kMagic).u32(3).u64(0).u64(1).str("k").u32(13).zeros(16);
  expect_error(b.data, {"'k'", "unknown value type 13"});
  Bytes a;
  a.u32(kMagic).u32(3).u64(0).u64(1).str("arr").u32(9).u32(77).u64(0).zeros(16);
  expect_error(a.data, {"'arr'", "unknown element type 77"});
}

TEST(GgufBadInput, DuplicateMetadataKey) {
  Bytes b;
  b.u32(kMagic).u32(3).u64(0).u64(2).str("k").u32(4).u32(1).str("k").u32(4).u32(2);
  expect_error(b.data, {"duplicate metadata key 'k'"});
}

TEST(GgufBadInput, NestingTooDeep) {
  Bytes b;
  b.u32(kMagic).u32(3).u64(0).u64(1).str("deep").u32(9);
  for (int i = 0; i < 8; ++i) b.u32(9).u64(1);
  b.u32(4).u64(0);
  expect_error(b.data, {"'deep'", "nests deeper"});
}

TEST(GgufBadInput, BadAlignmentValues) {
  auto with_alignment = [](uint32_t type, uint64_t v) {
    Bytes b;
    b.u32(kMagic).u32(3).u64(0).u64(1).str("general.alignment").u32(type);
    if (type == 4) b.u32(static_cast<uint32_t>(v)); else b.u64(v);
    return b.data;
  };
  expect_error(with_alignment(4, 0), {"general.alignment", "power of two"});
  expect_error(with_alignment(4, 24), {"general.alignment 24"});
  expect_error(with_alignment(10, 32), {"general.alignment must be uint32", "uint64"});
}

TEST(GgufBadInput, UnknownTensorTypeNamesTheTensor) {
  expect_error(one_tensor("blk.0.attn_q.weight", {32}, 4, 0, 32).data,
               {"'blk.0.attn_q.weight'", "unknown type id 4"}, StatusCode::kUnsupported);
  expect_error(one_tensor("x", {32}, 5000, 0, 32).data, {"'x'", "5000"},
               StatusCode::kUnsupported);
}

TEST(GgufBadInput, TensorDataPastEndOfFile) {
  // [4] f32 = 16 bytes at offset 64, but only 32 data bytes follow.
  Bytes b = one_tensor("token_embd.weight", {4}, kF32, 64, 32);
  const std::string size = std::to_string(b.size());
  expect_error(b.data, {"'token_embd.weight'", "past the end", "tensor offset 64",
                        "size 16 bytes", ("file size " + size).c_str()});
  // An offset so large that data_offset + offset wraps around.
  expect_error(one_tensor("wrap", {4}, kF32, ~0ull - 31, 32).data, {"'wrap'", "past the end"});
}

TEST(GgufBadInput, MisalignedTensorOffset) {
  expect_error(one_tensor("w", {4}, kF32, 4, 64).data,
               {"'w'", "offset 4", "not a multiple of the alignment 32"});
}

TEST(GgufBadInput, DuplicateTensorNames) {
  Bytes b;
  b.u32(kMagic).u32(3).u64(2).u64(0);
  b.str("w").u32(1).u64(8).u32(kF32).u64(0);
  b.str("w").u32(1).u64(8).u32(kF32).u64(32);
  b.pad_to(32).zeros(64);
  expect_error(b.data, {"duplicate tensor name 'w'"});
}

TEST(GgufBadInput, DimensionProblems) {
  expect_error(one_tensor("big", {1ull << 40, 1ull << 40}, kF32, 0, 32).data,
               {"'big'", "overflows"});
  expect_error(one_tensor("neg", {~0ull}, kF32, 0, 32).data, {"'neg'", "too large"});
  expect_error(one_tensor("d5", {1, 1, 1, 1, 8}, kF32, 0, 32).data,
               {"'d5'", "5 dimensions"});
  expect_error(one_tensor("q", {16, 2}, kQ4_0, 0, 64).data,
               {"'q'", "row of 16 elements", "block size 32"});
  // [2^31, 2^31, 2^31, 2^31] f32 fits no file: overflow caught before the size check.
  expect_error(one_tensor("huge", {1ull << 31, 1ull << 31, 1ull << 31, 1ull << 31}, kF32, 0, 32)
                   .data,
               {"'huge'", "overflows"});
}

TEST(GgufBadInput, CorruptingAnyHeaderByteNeverCrashes) {
  // Every byte before the data section, set to a few values: the reader must either accept
  // the file with every view inside the mapping or refuse it. ASan checks the rest.
  TempDir dir;
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string_array("tok", {"a", "bc"});
  w.set_i32_array("ids", {1, 2});
  std::vector<uint8_t> a(64, 1);
  ASSERT_TRUE(w.add_tensor("a", DType::F32, {2, 8}, a.data(), a.size()).ok());
  ASSERT_TRUE(w.write(dir.file("base.gguf")).ok());
  const auto base = testing_util::read_bytes(dir.file("base.gguf"));
  auto ref = GgufFile::open(dir.file("base.gguf"));
  ASSERT_TRUE(ref.ok());
  int refused = 0;
  for (size_t i = 0; i < ref->data_offset(); ++i) {
    for (uint8_t v : {uint8_t{0x00}, uint8_t{0xff}, static_cast<uint8_t>(base[i] + 1)}) {
      auto bytes = base;
      bytes[i] = v;
      auto f = open_bytes(dir, bytes, "fuzz.gguf");
      if (!f.ok()) {
        ++refused;
        EXPECT_FALSE(f.status().message().empty());
        continue;
      }
      for (const TensorView& t : f->tensors().all()) {
        const uint64_t off = static_cast<uint64_t>(t.data - f->mapped().data());
        EXPECT_TRUE(f->mapped().contains(off, t.nbytes)) << "byte " << i;
      }
    }
  }
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace edge
