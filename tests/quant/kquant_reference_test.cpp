// Our K-quant decoders against blocks made by llama.cpp's own quantiser and the values its
// dequantiser gives for them (tests/data/kquant/, made by make_reference.c there: 8 rows x
// 512 values per type). The decoders must agree exactly (same formula, fp32), and the repack
// into our packed layout within its stated bound: Q4_K -> w4a g32 rounds each sub-block's
// scale and min to fp16; Q2_K is requantised to w8 g32 (error <= s / 2), Q3_K, Q5_K and
// Q6_K to w6 g32 (rms <= half the absmax step amax / 32, no weight off by > 3.5 steps);
// Q4_K and Q6_K into their own cells exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "formats/tensor.h"
#include "quant/gguf_blocks.h"
#include "quant/packed.h"
#include "quant/quantize.h"
#include "quant/repack.h"

namespace edge {
namespace {

constexpr int64_t kRows = 8, kCols = 512;

std::vector<uint8_t> read_bytes(const std::string& name) {
  const std::string path = std::string(EDGE_SOURCE_DIR) + "/tests/data/kquant/" + name;
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  EXPECT_TRUE(f.good()) << "missing reference file " << path;
  if (!f.good()) return {};
  std::vector<uint8_t> v(static_cast<size_t>(f.tellg()));
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size()));
  return v;
}

std::vector<float> read_f32(const std::string& name) {
  const auto b = read_bytes(name);
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

struct Case {
  DType type;
  const char* name;
};

class KQuantReference : public ::testing::TestWithParam<Case> {};

TEST_P(KQuantReference, DecoderEqualsLlamaCppDequantiser) {
  const Case c = GetParam();
  const auto blocks = read_bytes(std::string(c.name) + ".blocks");
  const auto want = read_f32(std::string(c.name) + ".values");
  ASSERT_EQ(want.size(), static_cast<size_t>(kRows * kCols));
  int64_t be = 0, bb = 0;
  ASSERT_TRUE(dtype_block_info(c.type, &be, &bb));
  ASSERT_EQ(blocks.size(), static_cast<size_t>(kRows * kCols / be * bb));
  const size_t row_bytes = static_cast<size_t>(kCols / be * bb);
  std::vector<float> got(static_cast<size_t>(kCols));
  for (int64_t r = 0; r < kRows; ++r) {
    ASSERT_TRUE(dequantize_gguf_row(c.type, blocks.data() + r * row_bytes, kCols, got.data()).ok());
    for (int64_t i = 0; i < kCols; ++i) {
      const float w = want[static_cast<size_t>(r * kCols + i)];
      // Same formula as llama.cpp's; allow one ulp for a different product order.
      ASSERT_NEAR(got[static_cast<size_t>(i)], w, std::fabs(w) * 2.4e-7f + 1e-12f)
          << c.name << " row " << r << " col " << i;
    }
  }
}

// Q4_K into q4k_g256, Q5_K into q5k_g256 and Q6_K into q6k_g256 cells keep every field: the
// repacked weights are llama.cpp's own dequantised values, to the ulp the decoder test above
// allows.
void expect_exact_cells(DType type, const char* name, const char* format) {
  auto blocks = read_bytes(std::string(name) + ".blocks");
  const auto want = read_f32(std::string(name) + ".values");
  TensorView v{"blk.0.ffn_down.weight", type, {kRows, kCols}, blocks.data(), blocks.size()};
  const KQuantCells cells{.q4k = true, .q6k = true, .q5k = true};
  auto f = repack_format(type, cells);
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->name(), format);
  std::vector<uint8_t> packed(static_cast<size_t>(f->matrix_bytes(kRows, kCols)));
  ASSERT_TRUE(repack_matrix(v, packed.data(), packed.size(), 2, cells).ok());
  // Bytes: Q4_K 4.625 bits per weight, fewer than w4a_g32's 5 (Q4_K: 4.5); Q5_K 5.625,
  // fewer than w6_g32's 6.5 (Q5_K: 5.5); Q6_K 6.5625, exactly its own, where w6_g32's 6.5
  // bits are requantised.
  const int64_t portable = repack_format(type)->matrix_bytes(kRows, kCols);
  if (type != DType::Q6_K) EXPECT_LT(static_cast<int64_t>(packed.size()), portable);
  if (type == DType::Q5_K) EXPECT_DOUBLE_EQ(f->bits_per_weight(), 5.625);
  if (type == DType::Q6_K) EXPECT_DOUBLE_EQ(f->bits_per_weight(), 210.0 * 8 / 256);
  const auto got = dequantize_matrix(*f, packed.data(), kRows, kCols);
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], std::fabs(want[i]) * 2.4e-7f + 1e-12f) << name << " at " << i;
}

TEST(KQuantReferenceCells, Q4KCellsRepackExactly) {
  expect_exact_cells(DType::Q4_K, "q4_k", "q4k_g256");
}

TEST(KQuantReferenceCells, Q5KCellsRepackExactly) {
  expect_exact_cells(DType::Q5_K, "q5_k", "q5k_g256");
}

TEST(KQuantReferenceCells, Q6KCellsRepackExactly) {
  expect_exact_cells(DType::Q6_K, "q6_k", "q6k_g256");
}

TEST_P(KQuantReference, RepackStaysWithinItsBound) {
  const Case c = GetParam();
  auto blocks = read_bytes(std::string(c.name) + ".blocks");
  const auto want = read_f32(std::string(c.name) + ".values");
  TensorView v{"blk.0.ffn_down.weight", c.type, {kRows, kCols}, blocks.data(), blocks.size()};
  auto f = repack_format(c.type);
  ASSERT_TRUE(f.ok());
  std::vector<uint8_t> packed(static_cast<size_t>(f->matrix_bytes(kRows, kCols)));
  ASSERT_TRUE(repack_matrix(v, packed.data(), packed.size()).ok());
  const auto got = dequantize_matrix(*f, packed.data(), kRows, kCols);
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t g = 0; g < kCols / 32; ++g) {
      float amax = 0;
      for (int64_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(want[static_cast<size_t>(r * kCols + g * 32 + i)]));
      // w8: half a step of absmax / 127 (scale rounded up to fp16); w4a from Q4_K: the
      // fp16 rounding of scale and min, <= 2^-11 relative each, times up to 15 steps.
      const float bound = f->kind == PackedKind::kW8   ? amax / 254.0f * (1.0f + 1.0f / 1024) + 1e-9f
                          : f->kind == PackedKind::kW6 ? 3.5f * amax / 32.0f + 1e-9f
                                                       : amax * 2.0f / 2048.0f + 1e-9f;
      double sse = 0;
      for (int64_t i = 0; i < 32; ++i) {
        const size_t at = static_cast<size_t>(r * kCols + g * 32 + i);
        ASSERT_NEAR(got[at], want[at], bound) << c.name << " as " << f->name() << " row " << r << " col " << g * 32 + i;
        sse += (got[at] - want[at]) * (got[at] - want[at]);
      }
      if (f->kind == PackedKind::kW6) {
        ASSERT_LE(std::sqrt(sse / 32), amax / 64.0 + 1e-9) << c.name << " row " << r << " group " << g;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(LlamaCppBlocks, KQuantReference,
                         ::testing::Values(Case{DType::Q2_K, "q2_k"}, Case{DType::Q3_K, "q3_k"},
                                           Case{DType::Q4_K, "q4_k"}, Case{DType::Q5_K, "q5_k"},
                                           Case{DType::Q6_K, "q6_k"}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace edge
