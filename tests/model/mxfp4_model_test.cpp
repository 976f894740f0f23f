// A model whose weights are MXFP4 loads and computes what its weights mean, both ways a file
// can hold them: GGUF MXFP4 blocks (type 39, repacked into mxfp4_g32 cells at load) and our
// pre-packed mxfp4_g32 tensors (`quantize --type mxfp4`, used in place). With f32
// activations its logits and greedy tokens equal those of an F32 model holding the MXFP4
// values (so the matmuls, the embedding lookup and the tied output head read the cells
// right); with int8 activations (the engine's default for it) the logit error against that
// model stays within 4x W8 g32's.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <deque>

#include "convert/random_model.h"
#include "formats/gguf.h"
#include "kernels/packed_api.h"
#include "model/model_footprint.h"
#include "model_test_util.h"
#include "quant/gguf_blocks.h"
#include "quant/mxfp4.h"
#include "quant/packed.h"
#include "quant/quantize_file.h"

namespace edge {
namespace {

using testing::greedy;
using testing::load_or_die;
using testing::prefill_logits;
using testing::rel_diff;
using testing::temp_dir;
using testing::test_tokens;

// From an F32 model: gguf_mx (every 2-D "*.weight" as GGUF MXFP4 blocks, GGML's rule) and
// deq (the same weights as F32 holding the decoded MXFP4 values).
void write_mxfp4_files(const std::string& in, const std::string& gguf_mx, const std::string& deq) {
  auto g = GgufFile::open(in);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  GgufWriter wm, wd;
  for (const auto& [key, value] : g->metadata()) {
    wm.set_value(key, value);
    wd.set_value(key, value);
  }
  std::deque<std::vector<uint8_t>> keep;  // bytes must outlive write(); stable references
  int converted = 0;
  for (const TensorView& t : g->tensors().all()) {
    const bool mx = t.dtype == DType::F32 && t.shape.size() == 2 && t.shape[1] % 32 == 0 &&
                    t.name.size() > 7 && t.name.substr(t.name.size() - 7) == ".weight";
    if (!mx) {
      ASSERT_TRUE(wm.add_tensor(t.name, t.dtype, t.shape, t.data, t.nbytes).ok());
      ASSERT_TRUE(wd.add_tensor(t.name, t.dtype, t.shape, t.data, t.nbytes).ok());
      continue;
    }
    ++converted;
    std::vector<uint8_t> blocks(static_cast<size_t>(t.numel() / 32 * 17));
    ASSERT_TRUE(
        quantize_mxfp4_row(reinterpret_cast<const float*>(t.data), t.numel(), blocks.data()).ok());
    keep.push_back(std::move(blocks));
    const std::vector<uint8_t>& b = keep.back();
    ASSERT_TRUE(wm.add_tensor(t.name, DType::MXFP4, t.shape, b.data(), b.size()).ok());
    std::vector<uint8_t> f(static_cast<size_t>(t.numel()) * 4);
    ASSERT_TRUE(
        dequantize_gguf_row(DType::MXFP4, b.data(), t.numel(), reinterpret_cast<float*>(f.data()))
            .ok());
    keep.push_back(std::move(f));
    ASSERT_TRUE(
        wd.add_tensor(t.name, DType::F32, t.shape, keep.back().data(), keep.back().size()).ok());
  }
  EXPECT_GE(converted, 15);  // 2 layers x 7 matrices + token_embd
  ASSERT_TRUE(wm.write(gguf_mx).ok());
  ASSERT_TRUE(wd.write(deq).ok());
}

TEST(Mxfp4Model, ComputesItsWeightsFromGgufBlocksAndPrepackedCells) {
  const std::string dir = temp_dir("mxfp4");
  RandomModelOptions o;
  o.n_embd = 256;
  o.n_ff = 512;
  o.tied = true;  // the head reads token_embd.weight, mxfp4_g32 cells
  ASSERT_TRUE(write_random_model(o, dir + "/f32.gguf").ok());
  write_mxfp4_files(dir + "/f32.gguf", dir + "/gguf_mx.gguf", dir + "/deq.gguf");
  QuantizeOptions mx;
  mx.type = QuantType::kMxfp4;
  ASSERT_TRUE(quantize_gguf(dir + "/f32.gguf", dir + "/packed_mx.gguf", mx).ok());
  QuantizeOptions w8;
  w8.type = QuantType::kW8;
  w8.group = 32;
  ASSERT_TRUE(quantize_gguf(dir + "/deq.gguf", dir + "/w8.gguf", w8).ok());

  auto gm = load_or_die(dir + "/gguf_mx.gguf");  // repacked at load: int8 activations
  auto gmf = load_or_die(dir + "/gguf_mx.gguf", 2, "f32");
  auto pm = load_or_die(dir + "/packed_mx.gguf");  // pre-packed: the file asks for int8
  auto pmf = load_or_die(dir + "/packed_mx.gguf", 2, "f32");
  auto dq = load_or_die(dir + "/deq.gguf");
  auto q8 = load_or_die(dir + "/w8.gguf");
  ASSERT_TRUE(gm && gmf && pm && pmf && dq && q8);
  const DType want = packed_dtype(PackedFormat{PackedKind::kMxfp4, 32});
  for (const Model* m : {gm.get(), pm.get()}) {
    EXPECT_EQ(m->weights().layers[0].w_down.dtype, want);
    EXPECT_EQ(m->weights().layers[1].wq.dtype, want);
    EXPECT_EQ(m->weights().token_embd.dtype, want);
  }
  // One rule: GGML's blocks repacked and our quantiser's cells are the same bytes.
  const TensorView& a = gm->weights().token_embd;
  const TensorView& b = pm->weights().token_embd;
  ASSERT_EQ(a.nbytes, b.nbytes);
  EXPECT_EQ(std::memcmp(a.data, b.data, a.nbytes), 0);

  // The memory plan's bytes: the repacked blocks (anonymous) and the pre-packed cells
  // (mapped) take matrix_bytes of mxfp4_g32 each, 4.25 bits per weight.
  const int64_t embd_bytes =
      PackedFormat{PackedKind::kMxfp4, 32}.matrix_bytes(gm->config().n_vocab, 256);
  auto fg = read_model_footprint(dir + "/gguf_mx.gguf");
  auto fp = read_model_footprint(dir + "/packed_mx.gguf");
  ASSERT_TRUE(fg.ok() && fp.ok());
  for (const TensorFootprint& t : fg->tensors) {
    if (t.name == "token_embd.weight") {
      EXPECT_EQ(t.anon_bytes, static_cast<uint64_t>(embd_bytes));
    }
  }
  for (const TensorFootprint& t : fp->tensors) {
    if (t.name == "token_embd.weight") {
      EXPECT_EQ(t.mapped_bytes, static_cast<uint64_t>(embd_bytes));
    }
  }

  const std::vector<int32_t> toks = test_tokens(12, gm->config().n_vocab);
  const std::vector<float> lf = prefill_logits(*dq, toks);
  const std::vector<int32_t> prompt(toks.begin(), toks.begin() + 4);
  const std::vector<int32_t> want_greedy = greedy(*dq, prompt, 16);
  for (const Model* m : {gmf.get(), pmf.get()}) {
    EXPECT_LT(rel_diff(prefill_logits(*m, toks), lf), 1e-4);
    EXPECT_EQ(greedy(*m, prompt, 16), want_greedy);
  }
  const double e8 = rel_diff(prefill_logits(*q8, toks), lf);
  for (const Model* m : {gm.get(), pm.get()}) {
    const double e = rel_diff(prefill_logits(*m, toks), lf);
    std::printf(
        "logits vs the F32 model of the MXFP4 values (max |diff| / max |logit|, int8 "
        "activations, %s kernels): mxfp4 %.4g, W8 %.4g\n",
        packed_kernels().name, e, e8);
    EXPECT_LT(e, 4 * e8);
    EXPECT_LT(e, 0.1);
  }
}

}  // namespace
}  // namespace edge

namespace edge {
namespace {

// Experts [E, N, K] in the memory plan: a GGUF MXFP4 tensor repacks into E padded matrices
// (anonymous), a pre-packed one is used in place (mapped), E * matrix_bytes(N, K) either way.
TEST(Mxfp4Model, ExpertTensorsCountWholePaddedMatrices) {
  const std::string dir = testing::temp_dir("mxfp4_experts");
  RandomModelOptions o;
  ASSERT_TRUE(write_random_model(o, dir + "/f32.gguf").ok());
  auto g = GgufFile::open(dir + "/f32.gguf");
  ASSERT_TRUE(g.ok());
  const int64_t E = 4, n = 20, k = 64;
  const PackedFormat f{PackedKind::kMxfp4, 32};
  std::vector<uint8_t> blocks(static_cast<size_t>(E * n * k / 32 * 17), 0x11);
  std::vector<uint8_t> cells(static_cast<size_t>(E * f.matrix_bytes(n, k)), 0x22);
  GgufWriter w;
  for (const auto& [key, value] : g->metadata()) w.set_value(key, value);
  for (const TensorView& t : g->tensors().all())
    ASSERT_TRUE(w.add_tensor(t.name, t.dtype, t.shape, t.data, t.nbytes).ok());
  ASSERT_TRUE(w.add_tensor("blk.0.ffn_up_exps.weight", DType::MXFP4, {E, n, k}, blocks.data(),
                           blocks.size())
                  .ok());
  ASSERT_TRUE(w.add_tensor_sized("blk.0.ffn_down_exps.weight", packed_dtype(f), {E, n, k},
                                 cells.size(),
                                 [&](uint8_t* dst, uint64_t bytes) {
                                   std::memcpy(dst, cells.data(), bytes);
                                   return Status();
                                 })
                  .ok());
  ASSERT_TRUE(w.write(dir + "/experts.gguf").ok());
  auto fp = read_model_footprint(dir + "/experts.gguf");
  ASSERT_TRUE(fp.ok()) << fp.status().to_string();
  int seen = 0;
  for (const TensorFootprint& t : fp->tensors) {
    if (t.name == "blk.0.ffn_up_exps.weight") {
      EXPECT_EQ(t.anon_bytes, cells.size());
      ++seen;
    }
    if (t.name == "blk.0.ffn_down_exps.weight") {
      EXPECT_EQ(t.mapped_bytes, cells.size());
      ++seen;
    }
  }
  EXPECT_EQ(seen, 2);
}

}  // namespace
}  // namespace edge
