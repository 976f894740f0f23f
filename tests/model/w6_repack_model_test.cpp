// A model whose weights are Q6_K (as in llama.cpp's Q4_K_M files) loads with them kept in
// q6k_g256 cells where the kernels have them (x86 and aarch64 SIMD variants), else repacked to W6
// g32 (quant/repack.h, engine_kquant_cells()), and computes exactly what its weights mean: with f32
// activations its logits and greedy tokens equal those of an F32 model holding the Q6_K values (q6k
// cells) or the dequantised W6 weights (so the matmuls, the embedding lookup and the tied
// output head all read the layout right). Against the F32 model of the Q6_K values, the
// logit error with int8 activations (as the engine runs them) stays within 4x W8 g32's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>

#include "core/half.h"
#include "formats/gguf.h"
#include "kernels/packed_api.h"
#include "model/packed_weights.h"
#include "model_test_util.h"
#include "quant/gguf_blocks.h"
#include "quant/packed.h"
#include "quant/quantize.h"
#include "quant/quantize_file.h"
#include "quant/repack.h"

namespace edge {
namespace {

using testing::greedy;
using testing::load_or_die;
using testing::prefill_logits;
using testing::rel_diff;
using testing::temp_dir;
using testing::test_tokens;

// A plain Q6_K encoder (not llama.cpp's search): per 16 values scale amax / 32, the
// super-block's d = max scale / 127 (fp16), int8 sub-scales, codes q - 32 in [-32, 31].
// Layout (210 bytes): ql[128] | qh[64] | scales[16] | d; element e (h = e / 128,
// w = e % 128, s = w / 32, l = w % 32): low nibble in ql[64h + l + 32 (s & 1)] (high
// nibble for s >= 2), top 2 bits at 2s of qh[32h + l].
std::vector<uint8_t> encode_q6_k(const float* x, int64_t n) {
  std::vector<uint8_t> out(static_cast<size_t>(n / 256 * 210), 0);
  for (int64_t b = 0; b < n / 256; ++b) {
    const float* v = x + b * 256;
    uint8_t* blk = out.data() + b * 210;
    float sub[16], top = 0;
    for (int j = 0; j < 16; ++j) {
      float amax = 0;
      for (int i = 0; i < 16; ++i) amax = std::max(amax, std::fabs(v[16 * j + i]));
      sub[j] = amax / 32.0f;
      top = std::max(top, sub[j]);
    }
    const uint16_t dh = f32_to_f16(top / 127.0f);
    std::memcpy(blk + 208, &dh, 2);
    const float d = f16_to_f32(dh);
    int sc[16];
    for (int j = 0; j < 16; ++j) {
      sc[j] = d > 0 ? std::clamp(static_cast<int>(std::lround(sub[j] / d)), 0, 127) : 0;
      blk[192 + j] = static_cast<uint8_t>(static_cast<int8_t>(sc[j]));
    }
    for (int e = 0; e < 256; ++e) {
      const float ds = d * static_cast<float>(sc[e / 16]);
      const int q = ds > 0 ? std::clamp(static_cast<int>(std::lround(v[e] / ds)) + 32, 0, 63) : 32;
      const int h = e / 128, w = e % 128, s = w / 32, l = w % 32;
      uint8_t& lo = blk[64 * h + l + 32 * (s & 1)];
      lo = static_cast<uint8_t>(lo | ((q & 15) << (s >= 2 ? 4 : 0)));
      blk[128 + 32 * h + l] = static_cast<uint8_t>(blk[128 + 32 * h + l] | ((q >> 4) << (2 * s)));
    }
  }
  return out;
}

// From an F32 model: q6k (every 2-D weight with K % 256 == 0 as Q6_K), deq (the same
// weights as F32 holding the decoded Q6_K values) and w6deq (F32 holding what the Q6_K
// tensors repack to: W6 g32, dequantised).
void write_q6k_files(const std::string& in, const std::string& q6k, const std::string& deq,
                     const std::string& w6deq) {
  auto g = GgufFile::open(in);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  GgufWriter wq, wd, w6;
  for (const auto& [key, value] : g->metadata()) {
    wq.set_value(key, value);
    wd.set_value(key, value);
    w6.set_value(key, value);
  }
  std::deque<std::vector<uint8_t>> keep;  // bytes must outlive write(); stable references
  int converted = 0;
  for (const TensorView& t : g->tensors().all()) {
    const bool q = t.dtype == DType::F32 && t.shape.size() == 2 && t.shape[1] % 256 == 0;
    if (!q) {
      ASSERT_TRUE(wq.add_tensor(t.name, t.dtype, t.shape, t.data, t.nbytes).ok());
      ASSERT_TRUE(wd.add_tensor(t.name, t.dtype, t.shape, t.data, t.nbytes).ok());
      ASSERT_TRUE(w6.add_tensor(t.name, t.dtype, t.shape, t.data, t.nbytes).ok());
      continue;
    }
    ++converted;
    keep.push_back(encode_q6_k(reinterpret_cast<const float*>(t.data), t.numel()));
    const std::vector<uint8_t>& blocks = keep.back();
    ASSERT_TRUE(wq.add_tensor(t.name, DType::Q6_K, t.shape, blocks.data(), blocks.size()).ok());
    std::vector<uint8_t> f(static_cast<size_t>(t.numel()) * 4);
    ASSERT_TRUE(dequantize_gguf_row(DType::Q6_K, blocks.data(), t.numel(),
                                    reinterpret_cast<float*>(f.data()))
                    .ok());
    keep.push_back(std::move(f));
    ASSERT_TRUE(wd.add_tensor(t.name, DType::F32, t.shape, keep.back().data(), keep.back().size()).ok());
    const PackedFormat pf{PackedKind::kW6, 32};
    ASSERT_EQ(repack_format(DType::Q6_K)->name(), pf.name());
    const TensorView src{t.name, DType::Q6_K, t.shape, blocks.data(), blocks.size()};
    std::vector<uint8_t> packed(static_cast<size_t>(pf.matrix_bytes(t.shape[0], t.shape[1])));
    ASSERT_TRUE(repack_matrix(src, packed.data(), packed.size()).ok());
    const std::vector<float> v = dequantize_matrix(pf, packed.data(), t.shape[0], t.shape[1]);
    keep.emplace_back(reinterpret_cast<const uint8_t*>(v.data()),
                      reinterpret_cast<const uint8_t*>(v.data() + v.size()));
    ASSERT_TRUE(w6.add_tensor(t.name, DType::F32, t.shape, keep.back().data(), keep.back().size()).ok());
  }
  EXPECT_GE(converted, 8);  // 2 layers x 7 matrices + token_embd
  ASSERT_TRUE(wq.write(q6k).ok());
  ASSERT_TRUE(wd.write(deq).ok());
  ASSERT_TRUE(w6.write(w6deq).ok());
}

TEST(W6Repack, Q6KModelComputesItsWeights) {
  const std::string dir = temp_dir("w6_repack");
  RandomModelOptions o;
  o.n_embd = 256;
  o.n_ff = 512;
  o.tied = true;  // the head reads token_embd.weight, W6 after the repack
  ASSERT_TRUE(write_random_model(o, dir + "/f32.gguf").ok());
  write_q6k_files(dir + "/f32.gguf", dir + "/q6k.gguf", dir + "/deq.gguf", dir + "/w6deq.gguf");
  QuantizeOptions w8;
  w8.type = QuantType::kW8;
  w8.group = 32;
  ASSERT_TRUE(quantize_gguf(dir + "/deq.gguf", dir + "/w8.gguf", w8).ok());

  auto q6 = load_or_die(dir + "/q6k.gguf");  // int8 activations (repacked weights)
  auto q6f = load_or_die(dir + "/q6k.gguf", 2, "f32");
  auto w6f = load_or_die(dir + "/w6deq.gguf");
  auto dq = load_or_die(dir + "/deq.gguf");
  auto q8 = load_or_die(dir + "/w8.gguf");
  ASSERT_TRUE(q6 && q6f && w6f && dq && q8);
  const bool cells = engine_kquant_cells().q6k;
  const DType want =
      packed_dtype(cells ? PackedFormat{PackedKind::kQ6K, 256} : PackedFormat{PackedKind::kW6, 32});
  EXPECT_EQ(q6->weights().layers[0].w_down.dtype, want);
  EXPECT_EQ(q6->weights().layers[1].wq.dtype, want);
  EXPECT_EQ(q6->weights().token_embd.dtype, want);
  std::printf("Q6_K repacked to %s (%s kernels)\n",
              repack_format(DType::Q6_K, engine_kquant_cells())->name().c_str(),
              packed_kernels().name);

  // Either path is exact: f32 activations give the logits (float summation order apart)
  // and greedy tokens of the model of the Q6_K values (q6k cells) or of the W6 weights.
  const std::vector<int32_t> toks = test_tokens(12, q6->config().n_vocab);
  auto& exact = cells ? dq : w6f;
  const std::vector<float> lw = prefill_logits(*exact, toks);
  EXPECT_LT(rel_diff(prefill_logits(*q6f, toks), lw), 1e-4);
  const std::vector<int32_t> prompt(toks.begin(), toks.begin() + 4);
  EXPECT_EQ(greedy(*q6f, prompt, 16), greedy(*exact, prompt, 16));

  // Against the Q6_K values: requantising to 6 bits costs at most its step's ratio to W8's.
  const std::vector<float> lf = prefill_logits(*dq, toks);
  const double e6 = rel_diff(prefill_logits(*q6, toks), lf);
  const double e8 = rel_diff(prefill_logits(*q8, toks), lf);
  std::printf(
      "logits vs the F32 model of the Q6_K values (max |diff| / max |logit|, int8 "
      "activations): %s %.4g, W8 %.4g\n",
      cells ? "q6k" : "W6", e6, e8);
  EXPECT_LT(e6, 4 * e8);
  EXPECT_LT(e6, 0.1);
}

}  // namespace
}  // namespace edge
