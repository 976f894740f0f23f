// Our WavTokenizer decoder against llama.cpp's: the same random-weight files (rebuilt here
// with the options make-model used) and codes, compared with the PCM that llama.cpp's graph
// and its tts example's ISTFT produced (tests/data/vocoder/, made by make_reference.sh in
// that folder). llama.cpp rounds every convolution's input and kernel to F16 (im2col), so
// agreement is to ~1e-3 of the peak, not bit-exact; the torch ISTFT convention, by
// contrast, is off by ~2e-2 of the peak, so the bound can tell the conventions apart.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "convert/random_vocoder.h"
#include "model/model_test_util.h"
#include "model/vocoder.h"

namespace edge {
namespace {

std::vector<float> read_f32(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  EXPECT_TRUE(f.good()) << path;
  std::vector<float> v(static_cast<size_t>(f.tellg()) / sizeof(float));
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
  return v;
}

struct Case {
  const char* name;
  RandomVocoderOptions o;
  std::vector<int32_t> codes;
};

// make-model --arch wavtokenizer-dec --dim D --layers L --vocab V --type f16 [--seed S]:
// features 2/3 of D, MLP 3 D, groups the largest power of two <= 32 dividing D.
RandomVocoderOptions options(int dim, int layers, int vocab, int groups, uint64_t seed) {
  RandomVocoderOptions o;
  o.n_embd = dim;
  o.n_convnext = layers;
  o.n_vocab = vocab;
  o.n_features = dim * 2 / 3;
  o.n_ff = 3 * dim;
  o.n_groups = groups;
  o.dtype = DType::F16;
  o.seed = seed;
  return o;
}

std::vector<Case> cases() {
  std::vector<int32_t> c48;
  for (int i = 0; i < 40; ++i) c48.push_back((i * 37 + 11) % 100);
  return {{"d32", options(32, 2, 64, 32, 1), {1, 5, 9, 63, 0, 17, 33, 2, 40, 12, 7, 8}},
          {"d48", options(48, 3, 100, 16, 7), c48}};
}

float peak(const std::vector<float>& v) {
  float p = 0;
  for (float x : v) p = std::max(p, std::fabs(x));
  return p;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

TEST(VocoderReference, MatchesLlamaCppTtsOnRandomWeights) {
  for (const Case& c : cases()) {
    const std::string ref_path =
        std::string(EDGE_SOURCE_DIR) + "/tests/data/vocoder/llamacpp_" + c.name + ".pcm.f32";
    const std::vector<float> ref = read_f32(ref_path);
    ASSERT_EQ(ref.size(), c.codes.size() * 320) << ref_path;
    const std::string path = testing::temp_dir(std::string("vocref_") + c.name) + "/v.gguf";
    ASSERT_TRUE(write_random_vocoder(c.o, path).ok());
    for (IstftScale scale : {IstftScale::kLlamaCpp, IstftScale::kTorch}) {
      auto v = Vocoder::load(path, {.scale = scale});
      ASSERT_TRUE(v.ok()) << v.status().to_string();
      auto pcm = (*v)->decode(c.codes);
      ASSERT_TRUE(pcm.ok());
      ASSERT_EQ(pcm->size(), ref.size());
      const float rel = max_abs_diff(*pcm, ref) / peak(ref);
      if (scale == IstftScale::kLlamaCpp) {
        EXPECT_LT(rel, 2e-3f) << c.name << ": max |ours - llama.cpp| / peak";
      } else {
        EXPECT_GT(rel, 5e-3f) << c.name << ": the torch convention should not match llama.cpp";
      }
    }
  }
}

}  // namespace
}  // namespace edge
