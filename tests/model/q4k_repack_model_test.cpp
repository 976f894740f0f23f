// A model whose weights are Q4_K (the bulk of llama.cpp's Q4_K_M files) loads with them
// repacked where the engine's kernels want them (q4k_g256 cells on every SIMD variant, x86
// and aarch64; w4a_g32 with the scalar reference alone: engine_kquant_cells().q4k) and
// computes what its Q4_K values mean: with
// f32 activations its logits and greedy tokens equal those of an F32 model holding the
// decoded Q4_K values (q4k cells are exact; w4a_g32 rounds d * sc_j to fp16, within 5e-3),
// and with int8 activations (per 256 for q4k cells, as GGML's Q8_K) its logits stay close.
// The release suite runs this natively and again as an AVX2-only CPU (EDGE_MAX_ISA=avx2),
// so on an AVX-512 machine both targets are exercised.
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
#include "quant/repack.h"

namespace edge {
namespace {

using testing::greedy;
using testing::load_or_die;
using testing::prefill_logits;
using testing::rel_diff;
using testing::temp_dir;
using testing::test_tokens;

// A plain Q4_K encoder (not llama.cpp's search): per sub-block of 32 a scale (max - min) / 15
// and a min (<= 0), both as 6-bit multiples of the super-block's d and dmin (fp16).
// Layout (144 bytes): d | dmin | scales[12] | qs[128]; sub-blocks 2i and 2i+1 share qs[32 i ..
// 32 i + 31] (low nibbles, high nibbles); scales: j < 4: sc in q[j], m in q[j + 4] (6 bits);
// j >= 4: low 4 bits in q[j + 4] (sc) and its high nibble (m), top 2 bits in bits 6-7 of
// q[j - 4] (sc) and q[j] (m).
std::vector<uint8_t> encode_q4_k(const float* x, int64_t n) {
  std::vector<uint8_t> out(static_cast<size_t>(n / 256 * 144), 0);
  for (int64_t b = 0; b < n / 256; ++b) {
    const float* v = x + b * 256;
    uint8_t* blk = out.data() + b * 144;
    float scale[8], neg_min[8], top_s = 0, top_m = 0;
    for (int j = 0; j < 8; ++j) {
      float lo = 0, hi = 0;
      for (int i = 0; i < 32; ++i)
        lo = std::min(lo, v[32 * j + i]), hi = std::max(hi, v[32 * j + i]);
      scale[j] = (hi - lo) / 15.0f;
      neg_min[j] = -lo;
      top_s = std::max(top_s, scale[j]);
      top_m = std::max(top_m, neg_min[j]);
    }
    const uint16_t dh = f32_to_f16(top_s / 63.0f), mh = f32_to_f16(top_m / 63.0f);
    std::memcpy(blk, &dh, 2);
    std::memcpy(blk + 2, &mh, 2);
    const float d = f16_to_f32(dh), dmin = f16_to_f32(mh);
    int sc[8], m[8];
    for (int j = 0; j < 8; ++j) {
      sc[j] = d > 0 ? std::clamp(static_cast<int>(std::lround(scale[j] / d)), 0, 63) : 0;
      m[j] = dmin > 0 ? std::clamp(static_cast<int>(std::lround(neg_min[j] / dmin)), 0, 63) : 0;
    }
    uint8_t* q = blk + 4;
    for (int j = 0; j < 4; ++j) {
      q[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
      q[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
      q[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
    }
    for (int e = 0; e < 256; ++e) {
      const int j = e / 32;
      const float ds = d * static_cast<float>(sc[j]);
      const float off = dmin * static_cast<float>(m[j]);
      const int code =
          ds > 0 ? std::clamp(static_cast<int>(std::lround((v[e] + off) / ds)), 0, 15) : 0;
      blk[16 + 32 * (j / 2) + e % 32] |= static_cast<uint8_t>(j % 2 ? code << 4 : code);
    }
  }
  return out;
}

// From an F32 model: q4k (every 2-D weight with K % 256 == 0 as Q4_K) and deq (the same
// weights as F32 holding the decoded Q4_K values).
void write_q4k_files(const std::string& in, const std::string& q4k, const std::string& deq) {
  auto g = GgufFile::open(in);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  GgufWriter wq, wd;
  for (const auto& [key, value] : g->metadata()) {
    wq.set_value(key, value);
    wd.set_value(key, value);
  }
  std::deque<std::vector<uint8_t>> keep;  // bytes must outlive write(); stable references
  int converted = 0;
  for (const TensorView& t : g->tensors().all()) {
    if (t.dtype != DType::F32 || t.shape.size() != 2 || t.shape[1] % 256 != 0) {
      ASSERT_TRUE(wq.add_tensor(t.name, t.dtype, t.shape, t.data, t.nbytes).ok());
      ASSERT_TRUE(wd.add_tensor(t.name, t.dtype, t.shape, t.data, t.nbytes).ok());
      continue;
    }
    ++converted;
    keep.push_back(encode_q4_k(reinterpret_cast<const float*>(t.data), t.numel()));
    const std::vector<uint8_t>& blocks = keep.back();
    ASSERT_TRUE(wq.add_tensor(t.name, DType::Q4_K, t.shape, blocks.data(), blocks.size()).ok());
    std::vector<uint8_t> f(static_cast<size_t>(t.numel()) * 4);
    ASSERT_TRUE(dequantize_gguf_row(DType::Q4_K, blocks.data(), t.numel(),
                                    reinterpret_cast<float*>(f.data()))
                    .ok());
    // The encoder is plain but sound: every decoded weight within a step of its source.
    const auto* src = reinterpret_cast<const float*>(t.data);
    const auto* dec = reinterpret_cast<const float*>(f.data());
    float worst = 0, amax = 0;
    for (int64_t i = 0; i < t.numel(); ++i)
      worst = std::max(worst, std::fabs(dec[i] - src[i])), amax = std::max(amax, std::fabs(src[i]));
    EXPECT_LT(worst, amax / 8) << t.name;
    keep.push_back(std::move(f));
    ASSERT_TRUE(
        wd.add_tensor(t.name, DType::F32, t.shape, keep.back().data(), keep.back().size()).ok());
  }
  EXPECT_GE(converted, 8);  // 2 layers x 7 matrices + token_embd
  ASSERT_TRUE(wq.write(q4k).ok());
  ASSERT_TRUE(wd.write(deq).ok());
}

TEST(Q4KRepack, Q4KModelComputesItsQ4KValues) {
  const std::string dir = temp_dir("q4k_repack");
  RandomModelOptions o;
  o.n_embd = 256;
  o.n_ff = 512;
  o.tied = true;  // the head reads token_embd.weight, repacked too
  ASSERT_TRUE(write_random_model(o, dir + "/f32.gguf").ok());
  write_q4k_files(dir + "/f32.gguf", dir + "/q4k.gguf", dir + "/deq.gguf");

  auto q4 = load_or_die(dir + "/q4k.gguf");  // int8 activations (repacked weights)
  auto q4f = load_or_die(dir + "/q4k.gguf", 2, "f32");
  auto dq = load_or_die(dir + "/deq.gguf");
  ASSERT_TRUE(q4 && q4f && dq);
  const bool q4k_cells = engine_kquant_cells().q4k;
  const DType want = packed_dtype(*repack_format(DType::Q4_K, engine_kquant_cells()));
  EXPECT_EQ(q4->weights().layers[0].w_down.dtype, want);
  EXPECT_EQ(q4->weights().layers[1].wq.dtype, want);
  EXPECT_EQ(q4->weights().token_embd.dtype, want);
  std::printf("Q4_K repacked to %s (%s kernels)\n",
              repack_format(DType::Q4_K, engine_kquant_cells())->name().c_str(),
              packed_kernels().name);

  // f32 activations: the Q4_K values' own model, float summation order apart (q4k cells),
  // or the fp16 rounding of each sub-block's scale and min (w4a_g32).
  const std::vector<int32_t> toks = test_tokens(12, q4->config().n_vocab);
  const std::vector<float> lf = prefill_logits(*dq, toks);
  const double exact = rel_diff(prefill_logits(*q4f, toks), lf);
  EXPECT_LT(exact, q4k_cells ? 1e-4 : 5e-3);
  const std::vector<int32_t> prompt(toks.begin(), toks.begin() + 4);
  if (q4k_cells) {
    EXPECT_EQ(greedy(*q4f, prompt, 16), greedy(*dq, prompt, 16));
  }

  // int8 activations: per 256 for q4k cells (one scale per super-block), per 32 for w4a_g32.
  const double a8 = rel_diff(prefill_logits(*q4, toks), lf);
  std::printf(
      "logits vs the F32 model of the Q4_K values (max |diff| / max |logit|): f32 "
      "activations %.3g, int8 activations %.3g\n",
      exact, a8);
  EXPECT_LT(a8, 0.05);
}

}  // namespace
}  // namespace edge
