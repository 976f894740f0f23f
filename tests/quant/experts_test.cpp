// Tensors of 3 dims [E, N, K] (a mixture of experts' weights) in the packed layout: E packed
// [N, K] matrices back to back, expert e's bytes from e * matrix_bytes(N, K), each padded to
// whole panels on its own (quant/packed.h). Checked for every repack source type, the
// streamed repack and quantiser, the file quantiser's plan and a written file read back.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "formats/formats_test_util.h"
#include "formats/gguf.h"
#include "quant/block_builders.h"
#include "quant/packed.h"
#include "quant/quantize.h"
#include "quant/quantize_file.h"
#include "quant/quantize_file_stream.h"
#include "quant/quantize_file_test_util.h"
#include "quant/repack.h"

namespace edge {
namespace {

using testing_util::TempDir;

struct Collect {
  std::vector<uint8_t> bytes;
  GgufWriter::ChunkSink sink() {
    return [this](const void* p, uint64_t n) {
      const auto* b = static_cast<const uint8_t*>(p);
      bytes.insert(bytes.end(), b, b + n);
      return Status();
    };
  }
};

// Expert e's bytes equal the 2-D repack of its own [N, K] slice, for every packed kind a
// GGUF block type repacks into (N = 20: each expert has a padded panel of its own).
TEST(Experts, RepackStacksWholePaddedMatrices) {
  const int64_t E = 3, n = 20, k = 256;
  const KQuantCells all{.q4k = true, .q6k = true, .q5k = true};
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q8_0, DType::Q5_0, DType::Q2_K, DType::Q3_K,
                  DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::MXFP4}) {
    for (const KQuantCells cells : {KQuantCells{}, all}) {
      int64_t be = 0, bb = 0;
      ASSERT_TRUE(dtype_block_info(t, &be, &bb));
      test::Built src = test::build_blocks(t, static_cast<int>(E * n * k / be), 3);
      TensorView v{"blk.0.ffn_up_exps.weight", t, {E, n, k}, src.bytes.data(), src.bytes.size()};
      const PackedFormat f = *repack_format(t, cells);
      const std::string what = std::string(dtype_name(t)) + " as " + f.name();
      const int64_t mb = f.matrix_bytes(n, k);
      ASSERT_EQ(packed_tensor_bytes(f, v.shape), E * mb) << what;
      std::vector<uint8_t> whole(static_cast<size_t>(E * mb), 0xCD);
      ASSERT_TRUE(repack_matrix(v, whole.data(), whole.size(), 2, cells).ok()) << what;
      for (int64_t e = 0; e < E; ++e) {
        TensorView one = expert_matrix(v, e);
        ASSERT_EQ(one.shape, (std::vector<int64_t>{n, k}));
        std::vector<uint8_t> alone(static_cast<size_t>(mb), 0xEE);
        ASSERT_TRUE(repack_matrix(one, alone.data(), alone.size(), 1, cells).ok()) << what;
        ASSERT_EQ(std::memcmp(whole.data() + e * mb, alone.data(), alone.size()), 0)
            << what << " expert " << e;
      }
      Collect streamed;
      ASSERT_TRUE(repack_matrix_stream(v, streamed.sink(), 2, nullptr, cells).ok()) << what;
      EXPECT_EQ(streamed.bytes, whole) << what;
      EXPECT_FALSE(repack_matrix(v, whole.data(), whole.size() - 1, 1, cells).ok()) << what;
    }
  }
}

// A float [E, N, K] through the streamed quantiser: expert e's rows are source rows e * N ..,
// and its bytes are quantize_matrix of them alone.
TEST(Experts, QuantiserStacksWholePaddedMatrices) {
  const int64_t E = 2, n = 19, k = 64;
  std::vector<float> x = test::gaussian(E * n * k, 7);
  RowSource rows = [&](int64_t r, float* out) {
    std::memcpy(out, x.data() + r * k, static_cast<size_t>(k) * 4);
    return Status();
  };
  for (const PackedFormat f :
       {PackedFormat{PackedKind::kW4Sym, 32}, PackedFormat{PackedKind::kW8, 64},
        PackedFormat{PackedKind::kMxfp4, 32}}) {
    Collect streamed;
    ASSERT_TRUE(quantize_experts_stream(f, E, n, k, rows, streamed.sink(), 2).ok()) << f.name();
    ASSERT_EQ(static_cast<int64_t>(streamed.bytes.size()), E * f.matrix_bytes(n, k)) << f.name();
    for (int64_t e = 0; e < E; ++e) {
      RowSource mine = [&](int64_t r, float* out) { return rows(e * n + r, out); };
      std::vector<uint8_t> alone(static_cast<size_t>(f.matrix_bytes(n, k)));
      ASSERT_TRUE(quantize_matrix(f, n, k, mine, alone.data(), alone.size()).ok());
      EXPECT_EQ(std::memcmp(streamed.bytes.data() + e * alone.size(), alone.data(), alone.size()),
                0)
          << f.name() << " expert " << e;
    }
  }
}

TEST(Experts, FileQuantiserPlansExpertsAndCopiesOther3DTensors) {
  QuantizeOptions o;
  o.type = QuantType::kW4A8;
  o.group = 32;
  std::vector<float> w(4 * 20 * 64, 0.01f);
  TensorView exps{"blk.0.ffn_gate_exps.weight",
                  DType::F32,
                  {4, 20, 64},
                  reinterpret_cast<uint8_t*>(w.data()),
                  w.size() * 4};
  auto p = plan_tensor(exps, o);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->action, TensorPlan::Action::kPack);
  EXPECT_EQ(p->out_bytes, static_cast<uint64_t>(4 * p->format.matrix_bytes(20, 64)));
  // A convolution kernel [out, in, width] is not experts: copied as it is.
  TensorView conv{"a.conv1d.0.weight", DType::F32, {20, 64, 4}, exps.data, exps.nbytes};
  p = plan_tensor(conv, o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->action, TensorPlan::Action::kCopy);
  o.type = QuantType::kMxfp4;
  o.group = 0;
  p = plan_tensor(exps, o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->format.name(), "mxfp4_g32");
  EXPECT_EQ(*quant_type_from_name("mxfp4"), QuantType::kMxfp4);
  o.asym = true;
  EXPECT_FALSE(requested_format(o).ok());
  o.asym = false;
  o.group = 64;
  EXPECT_FALSE(requested_format(o).ok());
}

// A GGUF holding MXFP4 experts and F32 experts, quantised with --type mxfp4: both come back
// as 3-D mxfp4_g32 tensors that check_packed_tensor accepts, their bytes the repack /
// quantisation of each expert; a file cut short inside the last expert is refused.
TEST(Experts, WrittenFileReadsBackPerExpert) {
  TempDir dir;
  const int64_t E = 3, n = 18, k = 64;
  test::Built mx = test::build_blocks(DType::MXFP4, static_cast<int>(E * n * k / 32), 11);
  std::vector<float> fl = test::gaussian(E * n * k, 12);
  GgufWriter in;
  in.set_string("general.architecture", "test");
  ASSERT_TRUE(in.add_tensor("blk.0.ffn_up_exps.weight", DType::MXFP4, {E, n, k}, mx.bytes.data(),
                            mx.bytes.size())
                  .ok());
  ASSERT_TRUE(
      in.add_tensor("blk.0.ffn_down_exps.weight", DType::F32, {E, n, k}, fl.data(), fl.size() * 4)
          .ok());
  ASSERT_TRUE(in.write(dir.file("in.gguf")).ok());
  QuantizeOptions o;
  o.type = QuantType::kMxfp4;
  o.threads = 2;
  ASSERT_TRUE(quantize_gguf(dir.file("in.gguf"), dir.file("out.gguf"), o).ok());
  auto out = GgufFile::open(dir.file("out.gguf"), packed_gguf_types());
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  const PackedFormat f{PackedKind::kMxfp4, 32};
  for (const char* name : {"blk.0.ffn_up_exps.weight", "blk.0.ffn_down_exps.weight"}) {
    const TensorView* t = out->tensors().find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->dtype, packed_dtype(f));
    EXPECT_EQ(t->shape, (std::vector<int64_t>{E, n, k}));
    auto checked = check_packed_tensor(*t, out->mapped());
    ASSERT_TRUE(checked.ok()) << checked.status().to_string();
    for (int64_t e = 0; e < E; ++e) {
      std::vector<float> y = dequantize_matrix(f, t->data + e * f.matrix_bytes(n, k), n, k);
      for (int64_t i = 0; i < n * k; ++i) {
        const size_t src = static_cast<size_t>(e * n * k + i);
        if (std::string(name).find("_up_") != std::string::npos) {  // MXFP4: repacked exactly
          ASSERT_EQ(y[static_cast<size_t>(i)], mx.values[src]) << e << " " << i;
        } else {  // F32: GGML's block rule, within a quarter of the block's amax
          ASSERT_NEAR(y[static_cast<size_t>(i)], fl[src], 0.25 * 0.1) << e << " " << i;
        }
      }
    }
  }
  std::vector<uint8_t> bytes = testing_util::read_bytes(dir.file("out.gguf"));
  const TensorView* last = out->tensors().find("blk.0.ffn_down_exps.weight");
  bytes.resize(static_cast<size_t>(last->data - out->mapped().data()) + last->nbytes);
  testing_util::write_bytes(dir.file("cut.gguf"), bytes);
  auto cut = GgufFile::open(dir.file("cut.gguf"), packed_gguf_types());
  ASSERT_TRUE(cut.ok()) << cut.status().to_string();
  EXPECT_EQ(check_packed_tensor(*cut->tensors().find("blk.0.ffn_down_exps.weight"), cut->mapped())
                .status()
                .code(),
            StatusCode::kInvalidFormat);
}

}  // namespace
}  // namespace edge
