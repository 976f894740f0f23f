// GGUF block decoders against blocks built from the format's definition (block_builders.h):
// every value must match exactly, for every supported type.
#include "quant/gguf_blocks.h"

#include <gtest/gtest.h>

#include <cstring>

#include "quant/block_builders.h"

namespace edge {
namespace {

class BlockTypeTest : public testing::TestWithParam<DType> {};

TEST_P(BlockTypeTest, DecodesExactlyAsDefined) {
  const DType t = GetParam();
  int64_t be = 0, bb = 0;
  ASSERT_TRUE(dtype_block_info(t, &be, &bb));
  const int blocks = 7;
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    test::Built b = test::build_blocks(t, blocks, seed);
    ASSERT_EQ(b.bytes.size(), static_cast<size_t>(blocks * bb)) << dtype_name(t);
    ASSERT_EQ(b.values.size(), static_cast<size_t>(blocks * be));
    std::vector<float> out(b.values.size(), -12345.0f);
    ASSERT_TRUE(dequantize_gguf_row(t, b.bytes.data(), blocks * be, out.data()).ok());
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_EQ(out[i], b.values[i]) << dtype_name(t) << " element " << i << " seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, BlockTypeTest,
                         testing::Values(DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                                         DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K,
                                         DType::Q5_K, DType::Q6_K),
                         [](const testing::TestParamInfo<DType>& i) {
                           return std::string(dtype_name(i.param));
                         });

TEST(GgufBlocks, KnownQ4_0Block) {
  // d = 0.5 (fp16 0x3800); qs[0] = 0x1F: element 0 code 15 -> 3.5, element 16 code 1 -> -3.5.
  std::vector<uint8_t> b(18, 0x88);  // all other codes 8 -> 0
  b[0] = 0x00;
  b[1] = 0x38;
  b[2] = 0x1F;
  float out[32];
  ASSERT_TRUE(dequantize_gguf_row(DType::Q4_0, b.data(), 32, out).ok());
  EXPECT_EQ(out[0], 3.5f);
  EXPECT_EQ(out[16], -3.5f);
  for (int i = 1; i < 16; ++i) EXPECT_EQ(out[i], 0.0f);
}

TEST(GgufBlocks, FloatTypes) {
  const float f[3] = {1.5f, -2.25f, 65504.0f};
  uint16_t h[3], bf[3];
  for (int i = 0; i < 3; ++i) {
    h[i] = f32_to_f16(f[i]);
    bf[i] = f32_to_bf16(f[i]);
  }
  float out[3];
  ASSERT_TRUE(dequantize_gguf_row(DType::F16, reinterpret_cast<uint8_t*>(h), 3, out).ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out[i], f[i]);
  ASSERT_TRUE(dequantize_gguf_row(DType::BF16, reinterpret_cast<uint8_t*>(bf), 3, out).ok());
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -2.25f);
  ASSERT_TRUE(dequantize_gguf_row(DType::F32, reinterpret_cast<const uint8_t*>(f), 3, out).ok());
  EXPECT_EQ(out[2], 65504.0f);
}

TEST(GgufBlocks, RefusesPartialBlocksAndUnknownTypes) {
  std::vector<uint8_t> b(34, 0);
  float out[64];
  Status st = dequantize_gguf_row(DType::Q8_0, b.data(), 20, out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("block size 32"), std::string::npos) << st.message();
  EXPECT_EQ(dequantize_gguf_row(DType::Q8_K, b.data(), 256, out).code(), StatusCode::kUnsupported);
  EXPECT_FALSE(gguf_type_decodable(DType::Q8_K));
  EXPECT_TRUE(gguf_type_decodable(DType::Q6_K));
}

TEST(GgufBlocks, TensorRowChecksByteSize) {
  test::Built b = test::build_blocks(DType::Q4_0, 4, 9);  // 2 rows of 64
  TensorView t{"blk.0.w.weight", DType::Q4_0, {2, 64}, b.bytes.data(), b.bytes.size()};
  float out[64];
  ASSERT_TRUE(dequantize_tensor_row(t, 1, out).ok());
  for (int i = 0; i < 64; ++i) EXPECT_EQ(out[i], b.values[64 + i]);
  EXPECT_EQ(dequantize_tensor_row(t, 2, out).code(), StatusCode::kOutOfRange);
  t.nbytes -= 1;
  Status st = dequantize_tensor_row(t, 0, out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidFormat);
  EXPECT_NE(st.message().find("blk.0.w.weight"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("needs 72 bytes"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace edge
