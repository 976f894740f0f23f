// MXFP4 (GGUF type 39): the block decoder against the format's definition, GGML's quantiser
// rule (exponent, nearest value, ties), the lossless repack into mxfp4_g32 cells, the packed
// quantiser writing what the GGUF quantiser writes, and the packed kind's bookkeeping.
#include "quant/mxfp4.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "quant/block_builders.h"
#include "quant/cell.h"
#include "quant/gguf_blocks.h"
#include "quant/packed.h"
#include "quant/quantize.h"
#include "quant/repack.h"

namespace edge {
namespace {

TEST(Mxfp4, ScaleIsTwoToTheEMinus128ForEveryByte) {
  for (int e = 0; e < 256; ++e)
    EXPECT_EQ(mxfp4_scale(static_cast<uint8_t>(e)), std::ldexp(1.0f, e - 128)) << e;
  // GGML's subnormal bit patterns for e = 0 and 1, and 2^127 (not NaN) for 255.
  uint32_t bits;
  const float s0 = mxfp4_scale(0), s1 = mxfp4_scale(1), s255 = mxfp4_scale(255);
  std::memcpy(&bits, &s0, 4);
  EXPECT_EQ(bits, 0x00200000u);
  std::memcpy(&bits, &s1, 4);
  EXPECT_EQ(bits, 0x00400000u);
  EXPECT_TRUE(std::isfinite(s255));
}

TEST(Mxfp4, BlockDecodesElementOrderAndSigns) {
  uint8_t b[17] = {};
  b[0] = 128;  // 2^0: the doubled values themselves
  for (int j = 0; j < 16; ++j) b[1 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
  float y[32];
  ASSERT_TRUE(dequantize_gguf_row(DType::MXFP4, b, 32, y).ok());
  const float want[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], want[j]) << "low nibble of byte " << j;
    EXPECT_EQ(y[j + 16], want[15 - j]) << "high nibble of byte " << j;
  }
  EXPECT_FALSE(dequantize_gguf_row(DType::MXFP4, b, 16, y).ok());
}

TEST(Mxfp4, ExponentIsGgmlsRule) {
  EXPECT_EQ(mxfp4_exponent(1.0f), 125);  // floor(log2 1) - 2 + 127
  EXPECT_EQ(mxfp4_exponent(1.99f), 125);
  EXPECT_EQ(mxfp4_exponent(2.0f), 126);
  EXPECT_EQ(mxfp4_exponent(0.75f), 124);
  EXPECT_EQ(mxfp4_exponent(3.0e38f), 127 + 127 - 2);
  EXPECT_EQ(mxfp4_exponent(std::ldexp(1.0f, -125)), 0);
  EXPECT_EQ(mxfp4_exponent(std::ldexp(1.0f, -140)), 0);  // GGML: undefined; ours: 0
}

TEST(Mxfp4, EncoderTakesTheNearestValueAndTheLowerCodeOnTies) {
  float x[32] = {};
  x[0] = 6.0f;    // amax: e = 127, d = 0.5, 6 = 12 d (code 7)
  x[1] = 0.75f;   // halfway between 0.5 (code 1) and 1.0 (code 2): code 1
  x[2] = -0.75f;  // halfway between -0.5 (9) and -1 (10): code 9
  x[3] = -0.1f;   // nearer 0 than -0.5: code 0, never the negative zero 8
  x[4] = 5.1f;    // between 4 (code 6) and 6 (code 7): 6
  x[5] = -2.4f;   // nearest -2 (code 12)
  x[6] = 0.25f;   // halfway between 0 and 0.5: code 0
  uint8_t e = 0, code[32];
  mxfp4_encode_block(x, &e, code);
  EXPECT_EQ(e, 127);
  const uint8_t want[7] = {7, 1, 9, 0, 7, 12, 0};
  for (int j = 0; j < 7; ++j) EXPECT_EQ(code[j], want[j]) << "x = " << x[j];
  // A value beyond the largest magnitude clips to it: amax 7.9 still has e = 127 (d = 0.5).
  x[0] = 7.9f;
  mxfp4_encode_block(x, &e, code);
  EXPECT_EQ(e, 127);
  EXPECT_EQ(code[0], 7);
  // All zero: e = 0, codes 0.
  float z[32] = {};
  mxfp4_encode_block(z, &e, code);
  EXPECT_EQ(e, 0);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(code[j], 0);
}

TEST(Mxfp4, RowQuantiserRoundTripsRepresentableValues) {
  // Every value a block with e = 130 (d = 4) holds: quantising them gives them back.
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = 4.0f * static_cast<float>(kMxfp4Doubled[i % 16]);
  x[7] = 48.0f;  // the amax, so e = floor(log2 48) + 125 = 130
  x[39] = 48.0f;
  std::vector<uint8_t> blocks(2 * 17);
  ASSERT_TRUE(quantize_mxfp4_row(x.data(), 64, blocks.data()).ok());
  EXPECT_EQ(blocks[0], 130);
  std::vector<float> y(64);
  ASSERT_TRUE(dequantize_gguf_row(DType::MXFP4, blocks.data(), 64, y.data()).ok());
  EXPECT_EQ(y, x);
  x[5] = NAN;
  Status st = quantize_mxfp4_row(x.data(), 64, blocks.data());
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("element 5"), std::string::npos) << st.message();
  EXPECT_FALSE(quantize_mxfp4_row(x.data(), 48, blocks.data()).ok());
}

TEST(Mxfp4, PackedKindBookkeeping) {
  const PackedFormat f{PackedKind::kMxfp4, 32};
  EXPECT_EQ(static_cast<int>(PackedKind::kMxfp4), 7);  // appended: never reorder
  EXPECT_EQ(f.group_bytes(), 272);
  EXPECT_DOUBLE_EQ(f.bits_per_weight(), 4.25);  // MXFP4's own 17 bytes per 32
  EXPECT_EQ(f.name(), "mxfp4_g32");
  EXPECT_EQ(static_cast<uint32_t>(packed_dtype(f)), 1021u);  // 1000 + 3 * 7 + log2(32 / 32)
  PackedFormat back;
  ASSERT_TRUE(packed_format_of(static_cast<DType>(1021), &back));
  EXPECT_EQ(back.kind, PackedKind::kMxfp4);
  EXPECT_EQ(back.group, 32);
  for (uint32_t id = 1015; id <= 1020; ++id)
    EXPECT_FALSE(is_packed_dtype(static_cast<DType>(id))) << id;
  EXPECT_FALSE(is_packed_dtype(static_cast<DType>(1022)));
  EXPECT_TRUE(is_valid_format(f));
  EXPECT_FALSE(is_valid_format(PackedFormat{PackedKind::kMxfp4, 64}));
  int64_t be = 0, bb = 0;
  ASSERT_TRUE(packed_gguf_block_info(1021, &be, &bb));
  EXPECT_EQ(be, 32);
  EXPECT_EQ(bb, 17);  // one row of one cell: exactly a GGUF MXFP4 block
  EXPECT_EQ(repack_format(DType::MXFP4)->name(), "mxfp4_g32");
}

// GGUF MXFP4 -> mxfp4_g32: every value as the GGUF decoder gives it, the E8M0 bytes and
// codes in place, padding rows of the partial last panel zero over a dirty buffer.
TEST(Mxfp4, RepackIsLossless) {
  const int64_t n = 37, k = 96;
  test::Built src = test::build_blocks(DType::MXFP4, static_cast<int>(n * k / 32), 5);
  TensorView v{
      "blk.0.ffn_up_exps.weight", DType::MXFP4, {n, k}, src.bytes.data(), src.bytes.size()};
  const PackedFormat f{PackedKind::kMxfp4, 32};
  std::vector<uint8_t> packed(static_cast<size_t>(f.matrix_bytes(n, k)), 0xCD);
  ASSERT_TRUE(repack_matrix(v, packed.data(), packed.size(), 2).ok());
  std::vector<float> y = dequantize_matrix(f, packed.data(), n, k);
  ASSERT_EQ(y.size(), src.values.size());
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], src.values[i]) << i;
  // Row 5's E8M0 byte of group 1 is the source's byte 0 of block (5, 1).
  EXPECT_EQ(packed[static_cast<size_t>(f.cell_offset(0, 1, k) + cell::kMxfp4ExpOffset + 5)],
            src.bytes[(5 * 3 + 1) * 17]);
  const int64_t last = 2 * 3 * f.group_bytes();
  for (int g = 0; g < 3; ++g)
    for (int row = 5; row < 16; ++row)
      ASSERT_EQ(packed[static_cast<size_t>(last + g * f.group_bytes() + 256 + row)], 0) << row;
}

// Hugging Face's MXFP4 experts (GPT-OSS: blocks [E, R, K/32, 16] with elements 2i, 2i+1 in
// byte i, scales [E, R, K/32]) repack to the same cells as GGUF blocks of the same values,
// rows taken every `step` from row0 (the gate and up halves of gate_up_proj).
TEST(Mxfp4, HuggingFaceBlocksRepackAsTheGgufBlocks) {
  const int64_t E = 3, R = 38, k = 64, G = k / 32;  // 19 rows per half: a short last panel
  test::Built src = test::build_blocks(DType::MXFP4, static_cast<int>(E * R * G), 11);
  std::vector<uint8_t> blocks(static_cast<size_t>(E * R * G * 16)), scales(static_cast<size_t>(E * R * G));
  for (int64_t b = 0; b < E * R * G; ++b) {
    const uint8_t* gg = &src.bytes[static_cast<size_t>(b * 17)];
    auto code = [&](int j) { return j < 16 ? gg[1 + j] & 15 : gg[1 + j - 16] >> 4; };
    scales[static_cast<size_t>(b)] = gg[0];
    for (int i = 0; i < 16; ++i)
      blocks[static_cast<size_t>(b * 16 + i)] = static_cast<uint8_t>(code(2 * i) | code(2 * i + 1) << 4);
  }
  TensorView hb{"experts.gate_up_proj_blocks", DType::U8, {E, R, G, 16}, blocks.data(), blocks.size()};
  TensorView hs{"experts.gate_up_proj_scales", DType::U8, {E, R, G}, scales.data(), scales.size()};
  const PackedFormat f{PackedKind::kMxfp4, 32};
  for (int64_t row0 : {0, 1}) {
    // The GGUF stack of the same half: rows row0, row0 + 2, ... of every expert.
    std::vector<uint8_t> half;
    for (int64_t e = 0; e < E; ++e)
      for (int64_t r = row0; r < R; r += 2) {
        const auto at = src.bytes.begin() + (e * R + r) * G * 17;
        half.insert(half.end(), at, at + G * 17);
      }
    TensorView gv{"blk.0.ffn_gate_exps.weight", DType::MXFP4, {E, R / 2, k}, half.data(), half.size()};
    const int64_t bytes = packed_tensor_bytes(f, gv.shape);
    std::vector<uint8_t> want(static_cast<size_t>(bytes)), got(static_cast<size_t>(bytes), 0xCD);
    ASSERT_TRUE(repack_matrix(gv, want.data(), want.size(), 1).ok());
    ASSERT_TRUE(repack_hf_mxfp4(hb, hs, row0, 2, got.data(), got.size(), 2).ok());
    EXPECT_EQ(got, want) << "row0 " << row0;
  }
  // Every row (step 1), and the refusals: odd rows for a pair split, scales of another shape,
  // the wrong byte count.
  std::vector<uint8_t> all(static_cast<size_t>(packed_tensor_bytes(f, {E, R, k})));
  EXPECT_TRUE(repack_hf_mxfp4(hb, hs, 0, 1, all.data(), all.size()).ok());
  TensorView odd = hb;
  odd.shape = {E * R, 1, G, 16};
  TensorView odd_s = hs;
  odd_s.shape = {E * R, 1, G};
  EXPECT_EQ(repack_hf_mxfp4(odd, odd_s, 0, 2, all.data(), all.size()).code(), StatusCode::kInvalidArgument);
  TensorView bad_s = hs;
  bad_s.shape = {E, R, G + 1};
  Status st = repack_hf_mxfp4(hb, bad_s, 0, 1, all.data(), all.size());
  EXPECT_EQ(st.code(), StatusCode::kInvalidFormat);
  EXPECT_NE(st.message().find("gate_up_proj_scales"), std::string::npos) << st.message();
  EXPECT_EQ(repack_hf_mxfp4(hb, hs, 0, 1, all.data(), all.size() - 1).code(),
            StatusCode::kInvalidArgument);
}

// The packed quantiser writes the codes and exponents the GGUF quantiser writes (then
// repacked): one rule, whichever way a file is made.
TEST(Mxfp4, PackedQuantiserEqualsGgufQuantiserRepacked) {
  const int64_t n = 21, k = 128;
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n * k));
  for (size_t i = 0; i < x.size(); ++i) x[i] = nd(rng) * (1.0f + static_cast<float>(i % 7));
  for (int i = 0; i < 32; ++i) x[static_cast<size_t>(3 * k + 32 + i)] = 0.0f;  // a zero block
  std::vector<uint8_t> blocks(static_cast<size_t>(n * k / 32 * 17));
  for (int64_t r = 0; r < n; ++r)
    ASSERT_TRUE(quantize_mxfp4_row(x.data() + r * k, k, blocks.data() + r * (k / 32) * 17).ok());
  const PackedFormat f{PackedKind::kMxfp4, 32};
  std::vector<uint8_t> via_gguf(static_cast<size_t>(f.matrix_bytes(n, k)));
  TensorView v{"w", DType::MXFP4, {n, k}, blocks.data(), blocks.size()};
  ASSERT_TRUE(repack_matrix(v, via_gguf.data(), via_gguf.size()).ok());
  std::vector<uint8_t> direct(via_gguf.size(), 0xCD);
  RowSource rows = [&](int64_t r, float* out) {
    std::memcpy(out, x.data() + r * k, static_cast<size_t>(k) * 4);
    return Status();
  };
  ASSERT_TRUE(quantize_matrix(f, n, k, rows, direct.data(), direct.size(), 2).ok());
  EXPECT_EQ(direct, via_gguf);
  // And the quantised values are within GGML's rule's error: below half the block's step
  // at the value (<= 2^(e - 128) * 2) except where amax clips (<= amax / 4).
  std::vector<float> y = dequantize_matrix(f, direct.data(), n, k);
  for (size_t i = 0; i < y.size(); i += 32) {
    float amax = 0;
    for (size_t j = i; j < i + 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    for (size_t j = i; j < i + 32; ++j) ASSERT_LE(std::fabs(y[j] - x[j]), amax / 4 + 1e-30f) << j;
  }
}

// tests/data/mxfp4/ggml_reference.txt: inputs quantised and dequantised by GGML's
// quantize_row_mxfp4_ref / dequantize_row_mxfp4 (how: tests/data/mxfp4/README.md):
// gaussian and uniform blocks over 2^-20 .. 2^25, ties between neighbouring values, an
// all-zero block, maxima just below powers of two, tiny and huge blocks. Ours must write the
// same bytes and decode them to the same floats.
TEST(Mxfp4, EqualsGgmlOnTheReferenceVector) {
  std::ifstream in(std::string(EDGE_TEST_DATA) + "/mxfp4/ggml_reference.txt");
  ASSERT_TRUE(in.good()) << "tests/data/mxfp4/ggml_reference.txt missing";
  std::string line;
  std::vector<uint32_t> xs, ys;
  std::vector<uint8_t> bs;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line.substr(1));
    uint32_t v;
    while (f >> std::hex >> v) {
      if (line[0] == 'x') xs.push_back(v);
      if (line[0] == 'y') ys.push_back(v);
      if (line[0] == 'b') bs.push_back(static_cast<uint8_t>(v));
    }
  }
  const size_t blocks = xs.size() / 32;
  ASSERT_GE(blocks, 40u);
  ASSERT_EQ(ys.size(), xs.size());
  ASSERT_EQ(bs.size(), blocks * 17);
  std::vector<float> x(xs.size());
  std::memcpy(x.data(), xs.data(), xs.size() * 4);
  std::vector<uint8_t> ours(bs.size());
  ASSERT_TRUE(quantize_mxfp4_row(x.data(), static_cast<int64_t>(x.size()), ours.data()).ok());
  for (size_t b = 0; b < blocks; ++b)
    for (int j = 0; j < 17; ++j)
      ASSERT_EQ(ours[b * 17 + j], bs[b * 17 + j]) << "block " << b << " byte " << j;
  std::vector<float> y(x.size());
  ASSERT_TRUE(
      dequantize_gguf_row(DType::MXFP4, bs.data(), static_cast<int64_t>(y.size()), y.data()).ok());
  for (size_t i = 0; i < y.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &y[i], 4);
    ASSERT_EQ(u, ys[i]) << "element " << i;
  }
}

TEST(Mxfp4, NonFiniteInputIsRefused) {
  const PackedFormat f{PackedKind::kMxfp4, 32};
  std::vector<float> rows(16 * 32, 1.0f);
  rows[40] = INFINITY;
  std::vector<uint8_t> out(static_cast<size_t>(f.group_bytes()));
  Status st = quantize_panel(f, 32, rows.data(), 2, out.data());
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("column 8"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace edge
