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
#include "convert/random_audio_projector.h"
#include "convert/random_model.h"
#include "core/thread_pool.h"
#include "kernels/api.h"
#include "model/arch/whisper_enc.h"
#include "model/audio_input.h"
#include "model/forward.h"
#include "model/model_test_util.h"

namespace edge {
namespace {

struct MtmdRef {
  int n_tokens = 0, n_embd = 0;
  std::map<int, std::vector<float>> rows;
  std::vector<float> mean, rms;              // [n_tokens]
  std::vector<std::vector<int32_t>> tokens;  // the text chunks: before and after the audio
  int n_past = 0;
  std::vector<float> logits;  // [n_vocab] at the last prompt token
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
    } else if (word == "tokens") {
      r.tokens.emplace_back();
      for (int32_t id; in >> id;) r.tokens.back().push_back(id);
    } else if (word == "logits") {
      in >> word >> r.n_past;
      for (float v; in >> v;) r.logits.push_back(v);
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

// Our embeddings of the reference signal through the projector make-model writes for these
// flags.
std::vector<float> our_embeddings(AudioProjector p, uint64_t seed, const std::string& name,
                                  int64_t* n_tokens) {
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
  EXPECT_TRUE(write_random_audio_projector(o, dir + "/mmproj.gguf").ok());
  auto m = load_audio_encoder(dir + "/mmproj.gguf");
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  if (!m.ok()) return {};
  const std::vector<float> x = testing::two_tone_signal(24000);
  ThreadPool pool(2);
  auto e = encode_audio({select_kernels(), pool}, *m, x.data(), static_cast<int64_t>(x.size()),
                        n_tokens);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? *e : std::vector<float>{};
}

void compare(AudioProjector p, uint64_t seed, const std::string& name) {
  const MtmdRef ref = read_ref(name);
  ASSERT_GT(ref.n_tokens, 0) << "tests/data/whisper_mtmd/" << name << ".txt unreadable";
  int64_t n_tokens = 0;
  const std::vector<float> emb = our_embeddings(p, seed, name, &n_tokens);
  const std::vector<float>* e = &emb;
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
}

// The LM's first logits after the clip: prompt = mtmd's marker tokens, the audio rows
// spliced, then "hello" (mtmd's token ids from the file), on the LM make-model writes for
// `--arch llama --layers 2 --dim 64 --heads 4 --kv-heads 2 --vocab 512`.
void compare_logits(AudioProjector p, uint64_t seed, const std::string& name) {
  const MtmdRef ref = read_ref(name);
  ASSERT_EQ(ref.tokens.size(), 2u);
  ASSERT_EQ(ref.logits.size(), 512u);
  int64_t n_tokens = 0;
  const std::vector<float> emb = our_embeddings(p, seed, name, &n_tokens);
  ASSERT_EQ(n_tokens, ref.n_tokens);
  RandomModelOptions lo;
  lo.arch = "llama";
  lo.n_layer = 2;
  lo.n_embd = 64;
  lo.n_head = 4;
  lo.n_head_kv = 2;
  lo.n_vocab = 512;
  const std::string dir = testing::temp_dir("mtmd_lm_" + name);
  ASSERT_TRUE(write_random_model(lo, dir + "/lm.gguf").ok());
  auto lm = testing::load_or_die(dir + "/lm.gguf");
  ASSERT_NE(lm, nullptr);
  std::vector<int32_t> prompt = ref.tokens[0];
  const int64_t pos = static_cast<int64_t>(prompt.size());
  prompt.insert(prompt.end(), static_cast<size_t>(n_tokens), 0);
  prompt.insert(prompt.end(), ref.tokens[1].begin(), ref.tokens[1].end());
  ASSERT_EQ(static_cast<int>(prompt.size()), ref.n_past);
  const EmbeddingSplice splice{pos, n_tokens, emb.data(), false};
  auto state = InferenceState::create(*lm, 1024);
  ASSERT_TRUE(state.ok()) << state.status().to_string();
  auto logits = state->forward(prompt, false, std::span<const EmbeddingSplice>(&splice, 1));
  ASSERT_TRUE(logits.ok()) << logits.status().to_string();
  const double rel = testing::rel_diff(*logits, ref.logits);
  std::printf("%s: LM logits after the clip vs mtmd: max |diff| / max |logit| %.3g\n", name.c_str(),
              rel);
  // The rows differ from mtmd's by up to ~1e-3 (above); through 375 / 750 spliced rows and
  // the random 2-layer LM that becomes a few 1e-3 of the logits' scale.
  EXPECT_LT(rel, 1e-2);
  // Our tokenizer splits the markers as llama.cpp's does (parse_special, no BOS).
  const AudioMarkers mk = audio_markers(p);
  EXPECT_EQ(lm->tokenizer()->encode(mk.begin, false, true), ref.tokens[0]);
  // mtmd tokenizes the end marker and the text after it separately (each gets the SPM
  // space prefix).
  std::vector<int32_t> after = lm->tokenizer()->encode(mk.end, false, true);
  for (int32_t id : lm->tokenizer()->encode("hello", false, true)) after.push_back(id);
  EXPECT_EQ(after, ref.tokens[1]);
  std::filesystem::remove_all(dir);
}

TEST(WhisperMtmd, UltravoxEmbeddingsMatchIkLlamaCpp) {
  compare(AudioProjector::kUltravox, 3, "ultravox");
}

TEST(WhisperMtmd, Qwen2aEmbeddingsMatchIkLlamaCpp) {
  compare(AudioProjector::kQwen2a, 4, "qwen2a");
}

TEST(WhisperMtmd, UltravoxLmLogitsAfterTheClipMatchIkLlamaCpp) {
  compare_logits(AudioProjector::kUltravox, 3, "ultravox");
}

TEST(WhisperMtmd, Qwen2aLmLogitsAfterTheClipMatchIkLlamaCpp) {
  compare_logits(AudioProjector::kQwen2a, 4, "qwen2a");
}

}  // namespace
}  // namespace edge
