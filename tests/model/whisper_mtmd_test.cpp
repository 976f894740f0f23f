// Audio embeddings against ik_llama.cpp's mtmd: the same random-weight projector files
// (make-model --arch clip-ultravox|clip-qwen2a, flags below), the same 16 kHz signal, our
// encode_audio vs the numbers tests/data/whisper_mtmd/mtmd_audio_ref.cpp printed there
// (commands in that folder's README.md). mtmd computes in F32 with its own FFT and its
// stored 128-bin filterbank; differences are rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numbers>
#include <sstream>

#include "audio_test_signal.h"
#include "core/thread_pool.h"
#include "kernels/api.h"
#include "model/arch/whisper_enc.h"
#include "model/model_test_util.h"
#include "model/random_audio_projector.h"

namespace edge {
namespace {

struct MtmdRef {
  int n_tokens = 0, n_embd = 0;
  std::map<int, std::vector<float>> rows;
  std::vector<float> mean, rms;  // [n_tokens]
};

MtmdRef read_ref(const std::string& name) {
  std::ifstream f(std::string(EDGE_SOURCE_DIR) + "/tests/data/whisper_mtmd/" + name + ".txt");
  MtmdRef r;
  std::string line, word;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    in >> word;
    if (word == "n_tokens") {
      in >> r.n_tokens >> word >> r.n_embd;
    } else if (word == "row") {
      int i;
      in >> i;
      std::vector<float>& v = r.rows[i];
      v.resize(static_cast<size_t>(r.n_embd));
      for (float& x : v) in >> x;
    } else if (word == "stat") {
      int i;
      float m, s;
      in >> i >> m >> s;
      r.mean.push_back(m);
      r.rms.push_back(s);
    }
  }
  return r;
}

void compare(AudioProjector p, uint64_t seed, const std::string& name) {
  const MtmdRef ref = read_ref(name);
  ASSERT_GT(ref.n_tokens, 0) << "tests/data/whisper_mtmd/" << name << ".txt unreadable";
  // make-model --arch clip-<name> --dim 32 --layers 2 --heads 4 --proj-dim 64 --seed <seed>
  RandomAudioProjectorOptions o;
  o.projector = p;
  o.n_embd = 32;
  o.n_layer = 2;
  o.n_head = 4;
  o.n_ff = 128;
  o.n_out = 64;
  o.n_mm_ff = 128;
  o.seed = seed;
  const std::string dir = testing::temp_dir("mtmd_" + name);
  ASSERT_TRUE(write_random_audio_projector(o, dir + "/mmproj.gguf").ok());
  auto m = load_audio_encoder(dir + "/mmproj.gguf");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const std::vector<float> x = testing::two_tone_signal(24000);
  ThreadPool pool(2);
  int64_t n_tokens = 0;
  auto e = encode_audio({select_kernels(), pool}, *m, x.data(), static_cast<int64_t>(x.size()),
                        &n_tokens);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  ASSERT_EQ(n_tokens, ref.n_tokens);
  ASSERT_EQ(ref.n_embd, 64);
  // Embeddings are O(1) (the projector ends in an RMS-normed MLP or a linear map of a
  // layer-normed state): an absolute bound.
  float row_err = 0, stat_err = 0;
  for (const auto& [r, v] : ref.rows)
    for (int i = 0; i < ref.n_embd; ++i)
      row_err = std::max(row_err, std::abs((*e)[r * 64 + i] - v[i]));
  for (int r = 0; r < ref.n_tokens; ++r) {
    double s = 0, s2 = 0;
    for (int i = 0; i < 64; ++i)
      s += (*e)[r * 64 + i], s2 += double((*e)[r * 64 + i]) * (*e)[r * 64 + i];
    stat_err = std::max(stat_err, static_cast<float>(std::abs(s / 64 - ref.mean[r])));
    stat_err = std::max(stat_err, static_cast<float>(std::abs(std::sqrt(s2 / 64) - ref.rms[r])));
  }
  std::printf("%s vs mtmd: max |diff| %.3g over %zu rows, %.3g on per-row mean/rms of %d rows\n",
              name.c_str(), row_err, ref.rows.size(), stat_err, ref.n_tokens);
  EXPECT_LT(row_err, 2e-3f);
  EXPECT_LT(stat_err, 2e-3f);
  std::filesystem::remove_all(dir);
}

TEST(WhisperMtmd, UltravoxEmbeddingsMatchIkLlamaCpp) {
  compare(AudioProjector::kUltravox, 3, "ultravox");
}

TEST(WhisperMtmd, Qwen2aEmbeddingsMatchIkLlamaCpp) {
  compare(AudioProjector::kQwen2a, 4, "qwen2a");
}

}  // namespace
}  // namespace edge
