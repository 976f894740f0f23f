// A model whose weights are Q4_K (the bulk of llama.cpp's Q4_K_M files) loads with them
// repacked where the engine's kernels want them (q4k_g256 cells on every SIMD variant, x86
// and aarch64; w4a_g32 with the scalar reference alone: engine_kquant_cells().q4k) and
// computes what its Q4_K values mean: with
// f32 activations its logits and greedy tokens equal those of an F32 model holding the
// decoded Q4_K values (q4k cells are exact; w4a_g32 rounds d * sc_j to fp16, within 5e-3),
// and with int8 activations (per 256 for q4k cells, as GGML's Q8_K) its logits stay close.
// The same for Q5_K (the bulk of Q5_K_M files): q5k_g256 cells where the kernels have them
// (every x86 and aarch64 SIMD variant), else w6_g32: symmetric 6-bit codes per 32
// re-rounding Q5_K's asymmetric 5-bit ones cost far more (7.4e-2 of the largest logit
// measured with f32 activations, 7.6e-2 with int8, against 1e-6 and 2.9e-2 with the
// cells: the bound below is 0.12 for both).
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

// A plain Q4_K / Q5_K encoder (not llama.cpp's search): per sub-block of 32 a scale
// (max - min) / 15 (Q5_K: / 31) and a min (<= 0), both as 6-bit multiples of the
// super-block's d and dmin (fp16).
// Layout (Q4_K, 144 bytes): d | dmin | scales[12] | qs[128]; sub-blocks 2i and 2i+1 share
// qs[32 i .. 32 i + 31] (low nibbles, high nibbles); scales: j < 4: sc in q[j], m in q[j + 4]
// (6 bits); j >= 4: low 4 bits in q[j + 4] (sc) and its high nibble (m), top 2 bits in bits
// 6-7 of q[j - 4] (sc) and q[j] (m). Q5_K (176 bytes) has qh[32] before qs: bit 4 of the code
// of element 32 j + l is bit j of qh[l].
std::vector<uint8_t> encode_qk45(const float* x, int64_t n, bool five) {
  const int block = five ? 176 : 144, top = five ? 31 : 15, qs0 = five ? 48 : 16;
  std::vector<uint8_t> out(static_cast<size_t>(n / 256 * block), 0);
  for (int64_t b = 0; b < n / 256; ++b) {
    const float* v = x + b * 256;
    uint8_t* blk = out.data() + b * block;
    float scale[8], neg_min[8], top_s = 0, top_m = 0;
    for (int j = 0; j < 8; ++j) {
      float lo = 0, hi = 0;
      for (int i = 0; i < 32; ++i)
        lo = std::min(lo, v[32 * j + i]), hi = std::max(hi, v[32 * j + i]);
      scale[j] = (hi - lo) / static_cast<float>(top);
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
          ds > 0 ? std::clamp(static_cast<int>(std::lround((v[e] + off) / ds)), 0, top) : 0;
      blk[qs0 + 32 * (j / 2) + e % 32] |=
          static_cast<uint8_t>(j % 2 ? (code & 15) << 4 : code & 15);
      if (five) blk[16 + e % 32] |= static_cast<uint8_t>((code >> 4) << j);
    }
  }
  return out;
}

// From an F32 model: q4k (every 2-D weight with K % 256 == 0 as `type`, Q4_K or Q5_K) and
// deq (the same weights as F32 holding the decoded values).
void write_qk_files(DType type, const std::string& in, const std::string& q4k,
                    const std::string& deq) {
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
    keep.push_back(
        encode_qk45(reinterpret_cast<const float*>(t.data), t.numel(), type == DType::Q5_K));
    const std::vector<uint8_t>& blocks = keep.back();
    ASSERT_TRUE(wq.add_tensor(t.name, type, t.shape, blocks.data(), blocks.size()).ok());
    std::vector<uint8_t> f(static_cast<size_t>(t.numel()) * 4);
    ASSERT_TRUE(
        dequantize_gguf_row(type, blocks.data(), t.numel(), reinterpret_cast<float*>(f.data()))
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

// Q4_K, or Q5_K (five).
class KQuantRepack : public ::testing::TestWithParam<bool> {};

TEST_P(KQuantRepack, ModelComputesItsKQuantValues) {
  const bool five = GetParam();
  const DType type = five ? DType::Q5_K : DType::Q4_K;
  const std::string dir = temp_dir(five ? "q5k_repack" : "q4k_repack");
  RandomModelOptions o;
  o.n_embd = 256;
  o.n_ff = 512;
  o.tied = true;  // the head reads token_embd.weight, repacked too
  ASSERT_TRUE(write_random_model(o, dir + "/f32.gguf").ok());
  write_qk_files(type, dir + "/f32.gguf", dir + "/qk.gguf", dir + "/deq.gguf");

  auto qk = load_or_die(dir + "/qk.gguf");  // int8 activations (repacked weights)
  auto qkf = load_or_die(dir + "/qk.gguf", 2, "f32");
  auto dq = load_or_die(dir + "/deq.gguf");
  ASSERT_TRUE(qk && qkf && dq);
  const KQuantCells kc = engine_kquant_cells();
  const bool cells = five ? kc.q5k : kc.q4k;
  const PackedFormat f = *repack_format(type, kc);
  const DType want = packed_dtype(f);
  EXPECT_EQ(f.name(), cells ? (five ? "q5k_g256" : "q4k_g256") : (five ? "w6_g32" : "w4a_g32"));
  EXPECT_EQ(qk->weights().layers[0].w_down.dtype, want);
  EXPECT_EQ(qk->weights().layers[1].wq.dtype, want);
  EXPECT_EQ(qk->weights().token_embd.dtype, want);
  std::printf("%s repacked to %s (%s kernels)\n", dtype_name(type), f.name().c_str(),
              packed_kernels().name);

  // f32 activations: the values' own model, float summation order apart (cells), or the
  // fp16 rounding of each sub-block's scale and min (Q4_K -> w4a_g32), or the requantisation
  // of the 5-bit values to W6 (Q5_K -> w6_g32).
  const std::vector<int32_t> toks = test_tokens(12, qk->config().n_vocab);
  const std::vector<float> lf = prefill_logits(*dq, toks);
  const double exact = rel_diff(prefill_logits(*qkf, toks), lf);
  EXPECT_LT(exact, cells ? 1e-4 : five ? 0.12 : 5e-3);
  const std::vector<int32_t> prompt(toks.begin(), toks.begin() + 4);
  if (cells) {
    EXPECT_EQ(greedy(*qkf, prompt, 16), greedy(*dq, prompt, 16));
  }

  // int8 activations: per 256 for the cells (one scale per super-block), per 32 otherwise.
  const double a8 = rel_diff(prefill_logits(*qk, toks), lf);
  std::printf(
      "logits vs the F32 model of the %s values (max |diff| / max |logit|): f32 "
      "activations %.3g, int8 activations %.3g\n",
      dtype_name(type), exact, a8);
  EXPECT_LT(a8, cells || !five ? 0.05 : 0.12);
}

INSTANTIATE_TEST_SUITE_P(Types, KQuantRepack, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return std::string(i.param ? "Q5_K" : "Q4_K");
                         });

}  // namespace
}  // namespace edge
