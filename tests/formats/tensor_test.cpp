#include "formats/tensor.h"

#include <gtest/gtest.h>

namespace edge {
namespace {

struct BlockCase {
  DType t;
  int64_t elems, bytes;
  const char* name;
};

TEST(DType, BlockInfoMatchesGgmlLayouts) {
  const BlockCase cases[] = {
      {DType::F32, 1, 4, "f32"},       {DType::F16, 1, 2, "f16"},
      {DType::BF16, 1, 2, "bf16"},     {DType::Q4_0, 32, 18, "q4_0"},
      {DType::Q4_1, 32, 20, "q4_1"},   {DType::Q5_0, 32, 22, "q5_0"},
      {DType::Q5_1, 32, 24, "q5_1"},   {DType::Q8_0, 32, 34, "q8_0"},
      {DType::Q8_1, 32, 36, "q8_1"},   {DType::Q2_K, 256, 84, "q2_K"},
      {DType::Q3_K, 256, 110, "q3_K"}, {DType::Q4_K, 256, 144, "q4_K"},
      {DType::Q5_K, 256, 176, "q5_K"}, {DType::Q6_K, 256, 210, "q6_K"},
      {DType::Q8_K, 256, 292, "q8_K"}, {DType::I8, 1, 1, "i8"},
      {DType::I16, 1, 2, "i16"},       {DType::I32, 1, 4, "i32"},
      {DType::I64, 1, 8, "i64"},       {DType::F64, 1, 8, "f64"},
      {DType::MXFP4, 32, 17, "mxfp4"},
  };
  for (const BlockCase& c : cases) {
    int64_t e = 0, b = 0;
    ASSERT_TRUE(dtype_block_info(c.t, &e, &b)) << c.name;
    EXPECT_EQ(e, c.elems) << c.name;
    EXPECT_EQ(b, c.bytes) << c.name;
    EXPECT_STREQ(dtype_name(c.t), c.name);
    auto parsed = dtype_from_name(c.name);
    ASSERT_TRUE(parsed.ok()) << c.name;
    EXPECT_EQ(*parsed, c.t);
  }
}

TEST(DType, UnknownIdsAreReported) {
  int64_t e = 0, b = 0;
  EXPECT_FALSE(dtype_block_info(static_cast<DType>(4), &e, &b));  // removed Q4_2
  EXPECT_FALSE(dtype_block_info(static_cast<DType>(kFirstPackedType), &e, &b));
  EXPECT_STREQ(dtype_name(static_cast<DType>(99)), "unknown");
  auto r = dtype_row_bytes(static_cast<DType>(99), 32);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("99"), std::string::npos);
}

TEST(DType, RowBytesNeedsWholeBlocks) {
  EXPECT_EQ(*dtype_row_bytes(DType::Q4_0, 64), 36u);
  EXPECT_EQ(*dtype_row_bytes(DType::Q4_K, 512), 288u);
  EXPECT_EQ(*dtype_row_bytes(DType::BF16, 3), 6u);
  EXPECT_EQ(static_cast<uint32_t>(DType::MXFP4), 39u);         // GGML's id: files carry it
  EXPECT_EQ(*dtype_row_bytes(DType::MXFP4, 2880), 90u * 17u);  // GPT-OSS's expert K
  EXPECT_FALSE(dtype_row_bytes(DType::MXFP4, 48).ok());
  EXPECT_EQ(*dtype_row_bytes(DType::F32, 0), 0u);
  auto bad = dtype_row_bytes(DType::Q8_0, 33);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("block size 32"), std::string::npos);
  EXPECT_FALSE(dtype_row_bytes(DType::F32, -1).ok());
}

TEST(DType, NamesParseCaseInsensitively) {
  EXPECT_EQ(*dtype_from_name("Q4_K"), DType::Q4_K);
  EXPECT_EQ(*dtype_from_name("BF16"), DType::BF16);
  EXPECT_EQ(*dtype_from_name("q6_k"), DType::Q6_K);
  EXPECT_EQ(*dtype_from_name("MXFP4"), DType::MXFP4);
  EXPECT_FALSE(dtype_from_name("q4").ok());
  EXPECT_FALSE(dtype_from_name("").ok());
}

TEST(TensorView, ShapeHelpers) {
  TensorView v;
  v.shape = {512, 64};
  EXPECT_EQ(v.numel(), 512 * 64);
  EXPECT_EQ(v.rows(), 512);
  EXPECT_EQ(v.cols(), 64);
  EXPECT_EQ(v.shape_string(), "[512, 64]");
  v.shape = {};
  EXPECT_EQ(v.shape_string(), "[]");
  EXPECT_EQ(v.numel(), 1);
}

TEST(TensorSet, KeepsOrderFindsByNameRefusesDuplicates) {
  TensorSet s;
  TensorView a;
  a.name = "b.weight";
  TensorView b;
  b.name = "a.weight";
  b.shape = {3};
  ASSERT_TRUE(s.add(a).ok());
  ASSERT_TRUE(s.add(b).ok());
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s.all()[0].name, "b.weight");
  ASSERT_NE(s.find("a.weight"), nullptr);
  EXPECT_EQ(s.find("a.weight")->shape, std::vector<int64_t>{3});
  EXPECT_EQ(s.find("c.weight"), nullptr);
  Status dup = s.add(a);
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.message().find("b.weight"), std::string::npos);
  EXPECT_EQ(s.size(), 2u);
}

}  // namespace
}  // namespace edge
