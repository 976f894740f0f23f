// Repacking GGUF block tensors into the packed layout: Q4_0 / Q4_1 / Q8_0 exactly, Q4_K
// within the fp16-rounding bound, the W8-requantised types within s / 2, the W6-requantised
// ones within their search's bounds.
#include "quant/repack.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/half.h"
#include "quant/block_builders.h"
#include "quant/cell.h"
#include "quant/gguf_blocks.h"
#include "quant/quantize.h"

namespace edge {
namespace {

struct Repacked {
  test::Built src;
  PackedFormat f;
  std::vector<uint8_t> packed;
  int64_t n, k;
};

// A [n, k] tensor of random blocks (row-major: k / block_elems blocks per row).
Repacked repack(DType t, int64_t n, int64_t k, uint32_t seed, int threads = 1,
                KQuantCells cells = {}) {
  Repacked r;
  r.n = n;
  r.k = k;
  int64_t be = 0, bb = 0;
  EXPECT_TRUE(dtype_block_info(t, &be, &bb));
  r.src = test::build_blocks(t, static_cast<int>(n * k / be), seed);
  TensorView v{"blk.0.ffn_up.weight", t, {n, k}, r.src.bytes.data(), r.src.bytes.size()};
  auto f = repack_format(t, cells);
  EXPECT_TRUE(f.ok());
  r.f = *f;
  r.packed.assign(static_cast<size_t>(r.f.matrix_bytes(n, k)), 0xCD);
  Status st = repack_matrix(v, r.packed.data(), r.packed.size(), threads, cells);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return r;
}

TEST(Repack, FormatsPerSourceType) {
  EXPECT_EQ(repack_format(DType::Q4_0)->name(), "w4s_g32");
  EXPECT_EQ(repack_format(DType::Q4_1)->name(), "w4a_g32");
  EXPECT_EQ(repack_format(DType::Q4_K)->name(), "w4a_g32");
  for (DType t : {DType::Q8_0, DType::Q2_K})
    EXPECT_EQ(repack_format(t)->name(), "w8_g32") << dtype_name(t);
  for (DType t : {DType::Q5_0, DType::Q5_1, DType::Q5_K, DType::Q6_K, DType::Q3_K})
    EXPECT_EQ(repack_format(t)->name(), "w6_g32") << dtype_name(t);
  // With every K-quant cell kept, only Q4_K, Q5_K and Q6_K change: the 32-wide Q5_0 / Q5_1
  // blocks are not super-blocks (they once were sent to q6k_g256 with the Q6_K ones).
  const KQuantCells all{.q4k = true, .q6k = true, .q5k = true};
  EXPECT_EQ(repack_format(DType::Q4_K, all)->name(), "q4k_g256");
  EXPECT_EQ(repack_format(DType::Q5_K, all)->name(), "q5k_g256");
  EXPECT_EQ(repack_format(DType::Q6_K, all)->name(), "q6k_g256");
  for (DType t : {DType::Q5_0, DType::Q5_1, DType::Q3_K})
    EXPECT_EQ(repack_format(t, all)->name(), "w6_g32") << dtype_name(t);
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q8_0, DType::Q2_K})
    EXPECT_EQ(repack_format(t, all)->name(), repack_format(t)->name()) << dtype_name(t);
  EXPECT_EQ(repack_format(DType::F32).status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(repack_format(DType::Q8_K).status().code(), StatusCode::kUnsupported);
}

class Lossless : public testing::TestWithParam<DType> {};

TEST_P(Lossless, ValuesAreBitExact) {
  const DType t = GetParam();
  Repacked r = repack(t, 37, 96, 17);  // 3 panels, the last partial
  std::vector<float> y = dequantize_matrix(r.f, r.packed.data(), r.n, r.k);
  int clamped = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    if (t == DType::Q8_0 && y[i] != r.src.values[i]) {
      // Only a source code of -128 may differ (clamped to -127: an error of one scale step).
      ++clamped;
      continue;
    }
    ASSERT_EQ(y[i], r.src.values[i]) << dtype_name(t) << " element " << i;
  }
  EXPECT_LT(clamped, static_cast<int>(y.size()) / 100);
}

INSTANTIATE_TEST_SUITE_P(Types, Lossless, testing::Values(DType::Q4_0, DType::Q4_1, DType::Q8_0),
                         [](const testing::TestParamInfo<DType>& i) {
                           return std::string(dtype_name(i.param));
                         });

TEST(Repack, Q8_0MinusOneTwentyEightIsClampedByOneStep) {
  Repacked r = repack(DType::Q8_0, 16, 256, 23);
  std::vector<float> y = dequantize_matrix(r.f, r.packed.data(), r.n, r.k);
  int seen = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const size_t blk = i / 32;
    const float d = f16_to_f32(static_cast<uint16_t>(r.src.bytes[blk * 34] | (r.src.bytes[blk * 34 + 1] << 8)));
    const int8_t q = static_cast<int8_t>(r.src.bytes[blk * 34 + 2 + i % 32]);
    const float want = q == -128 ? -127.0f * d : r.src.values[i];
    ASSERT_EQ(y[i], want) << "element " << i;
    seen += q == -128;
  }
  EXPECT_GT(seen, 0);  // the random codes did include -128
}

// Q4_K: |error| <= 15 u(d sc) + u(dmin m), u(v) = max(|v| 2^-11, 2^-25) (repack.h). The
// test recomputes d*sc and dmin*m from the stored block with its own field decoding.
TEST(Repack, Q4KWithinFp16RoundingBound) {
  Repacked r = repack(DType::Q4_K, 20, 512, 31);
  std::vector<float> y = dequantize_matrix(r.f, r.packed.data(), r.n, r.k);
  double max_err = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const uint8_t* b = r.src.bytes.data() + (i / 256) * 144;
    const float d = f16_to_f32(static_cast<uint16_t>(b[0] | (b[1] << 8)));
    const float dmin = f16_to_f32(static_cast<uint16_t>(b[2] | (b[3] << 8)));
    const int j = static_cast<int>(i % 256) / 32;
    const int sc = j < 4 ? (b[4 + j] & 63) : ((b[4 + j + 4] & 15) | ((b[4 + j - 4] >> 6) << 4));
    const int mn = j < 4 ? (b[4 + j + 4] & 63) : ((b[4 + j + 4] >> 4) | ((b[4 + j] >> 6) << 4));
    auto u = [](double v) { return std::max(std::fabs(v) * std::ldexp(1.0, -11), std::ldexp(1.0, -25)); };
    const double bound = 15 * u(d * sc) + u(dmin * mn) + 1e-9;
    const double e = std::fabs(static_cast<double>(y[i]) - r.src.values[i]);
    ASSERT_LE(e, bound) << "element " << i;
    max_err = std::max(max_err, e);
  }
  EXPECT_GT(max_err, 0.0);  // the bound is exercised: this repack is not lossless
}

class ToW8 : public testing::TestWithParam<DType> {};

// Requantised types: |error| <= s / 2 with s = absmax(group) / 127 rounded up to fp16.
TEST_P(ToW8, WithinHalfAStep) {
  const DType t = GetParam();
  Repacked r = repack(t, 19, 512, 41, /*threads=*/2);
  EXPECT_EQ(r.f.kind, PackedKind::kW8);
  std::vector<float> y = dequantize_matrix(r.f, r.packed.data(), r.n, r.k);
  for (size_t g0 = 0; g0 < y.size(); g0 += 32) {
    float amax = 0;
    for (size_t i = g0; i < g0 + 32; ++i) amax = std::max(amax, std::fabs(r.src.values[i]));
    const float s = f16_to_f32(f16_round_up(amax / 127.0f));
    EXPECT_LE(s, amax / 127.0f * (1.0f + 1.0f / 1024) + 1e-7f);
    for (size_t i = g0; i < g0 + 32; ++i)
      ASSERT_LE(std::fabs(y[i] - r.src.values[i]), s / 2 * (1 + 1e-6f)) << dtype_name(t) << " " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, ToW8, testing::Values(DType::Q2_K),
                         [](const testing::TestParamInfo<DType>& i) {
                           return std::string(dtype_name(i.param));
                         });

// Q4_K, Q5_K and Q6_K into their own cells: every value as the GGUF decoder gives it, over
// panels whose last one is partial (its padding rows zeroed over a dirty buffer), 2 threads.
TEST(Repack, KQuantCellsKeepEveryValue) {
  const KQuantCells all{.q4k = true, .q6k = true, .q5k = true};
  for (DType t : {DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    Repacked r = repack(t, 37, 512, 29, /*threads=*/2, all);
    EXPECT_EQ(r.f.group, 256) << dtype_name(t);
    std::vector<float> y = dequantize_matrix(r.f, r.packed.data(), r.n, r.k);
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_NEAR(y[i], r.src.values[i], std::fabs(r.src.values[i]) * 2.4e-7f + 1e-12f)
          << dtype_name(t) << " at " << i;
    // The padding rows of the last panel (rows 37..47) are zeros, not the buffer's 0xCD.
    const int64_t cb = r.f.group_bytes(), last = 2 * (512 / 256) * cb;
    for (int64_t g = 0; g < 2; ++g)
      for (int row = 37 - 32; row < 16; ++row)
        ASSERT_EQ(r.packed[static_cast<size_t>(last + g * cb + cell::kQ4KDOffset + 2 * row)], 0)
            << dtype_name(t) << " padding row " << row;
  }
}

class ToW6 : public testing::TestWithParam<DType> {};

// Requantised to W6 by the scale search (repack.h): per group of 32, with the absmax step
// s = amax / 32, rms error <= s / 2 and no weight off by more than 3.5 s.
TEST_P(ToW6, WithinTheSearchBounds) {
  const DType t = GetParam();
  Repacked r = repack(t, 19, 512, 43, /*threads=*/2);
  EXPECT_EQ(r.f.kind, PackedKind::kW6);
  std::vector<float> y = dequantize_matrix(r.f, r.packed.data(), r.n, r.k);
  double worst_rms = 0;
  for (size_t g0 = 0; g0 < y.size(); g0 += 32) {
    float amax = 0;
    for (size_t i = g0; i < g0 + 32; ++i) amax = std::max(amax, std::fabs(r.src.values[i]));
    const double step = amax / 32.0;
    double sse = 0;
    for (size_t i = g0; i < g0 + 32; ++i) {
      const double e = std::fabs(static_cast<double>(y[i]) - r.src.values[i]);
      ASSERT_LE(e, 3.5 * step + 1e-9) << dtype_name(t) << " " << i;
      sse += e * e;
    }
    const double rms = std::sqrt(sse / 32);
    ASSERT_LE(rms, step / 2 + 1e-9) << dtype_name(t) << " group at " << g0;
    if (step > 0) worst_rms = std::max(worst_rms, rms / step);
  }
  EXPECT_GT(worst_rms, 0.0);  // requantised, not copied: some error
}

INSTANTIATE_TEST_SUITE_P(Types, ToW6,
                         testing::Values(DType::Q5_0, DType::Q5_1, DType::Q5_K, DType::Q6_K,
                                         DType::Q3_K),
                         [](const testing::TestParamInfo<DType>& i) {
                           return std::string(dtype_name(i.param));
                         });

TEST(Repack, CorruptTensorIsRefusedWithItsName) {
  test::Built b = test::build_blocks(DType::Q4_0, 8, 1);  // [4, 64] needs 144 bytes
  TensorView v{"blk.3.attn_q.weight", DType::Q4_0, {4, 64}, b.bytes.data(), b.bytes.size() - 18};
  PackedFormat f = *repack_format(DType::Q4_0);
  std::vector<uint8_t> out(static_cast<size_t>(f.matrix_bytes(4, 64)));
  Status st = repack_matrix(v, out.data(), out.size());
  EXPECT_EQ(st.code(), StatusCode::kInvalidFormat);
  EXPECT_NE(st.message().find("blk.3.attn_q.weight"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("needs 144 bytes but has 126"), std::string::npos) << st.message();
  v.nbytes = b.bytes.size();
  EXPECT_TRUE(repack_matrix(v, out.data(), out.size()).ok());
  EXPECT_FALSE(repack_matrix(v, out.data(), out.size() + 1).ok());
  v.dtype = DType::Q8_K;
  EXPECT_EQ(repack_matrix(v, out.data(), out.size()).code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace edge
