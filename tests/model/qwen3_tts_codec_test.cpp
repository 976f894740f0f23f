// The Qwen3-TTS 12 Hz codec decoder: loading a random-weight tokenizer directory under the
// published names, its errors, and decoding: output size and range, causality (a frame
// changes no earlier sample), and streamed decoding equal to the whole utterance bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "convert/random_qwen3_tts_codec.h"
#include "formats/hf_config.h"
#include "kernels/api.h"
#include "model/model_test_util.h"
#include "model/qwen3_tts_codec_decoder.h"

namespace edge {
namespace {

std::string write_codec(const std::string& name, RandomQwen3TtsCodecOptions o = {}) {
  if (o.hp.latent_dim == Qwen3TtsCodecHparams().latent_dim) o.hp = small_qwen3_tts_codec_hparams();
  const std::string dir = testing::temp_dir("q3codec_" + name);
  const Status st = write_random_qwen3_tts_codec(o, dir);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return dir;
}

std::unique_ptr<Qwen3TtsCodec> load(const std::string& dir) {
  auto c = Qwen3TtsCodec::load(dir, {.n_threads = 2});
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return c.ok() ? std::move(c).value() : nullptr;
}

std::vector<int32_t> random_codes(int64_t frames, int64_t nq, int64_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> c(static_cast<size_t>(frames * nq));
  for (int32_t& x : c) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(size));
  return c;
}

bool same_bits(const float* a, const float* b, size_t n) {
  return std::memcmp(a, b, n * 4) == 0;
}

class Qwen3TtsCodecTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { dir_ = new std::string(write_codec("shared")); }
  static void TearDownTestSuite() { delete dir_; }
  static std::string* dir_;
};
std::string* Qwen3TtsCodecTest::dir_ = nullptr;

TEST_F(Qwen3TtsCodecTest, DecodesFramesTo1920SamplesEachInRange) {
  auto c = load(*dir_);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->samples_per_frame(), 1920);
  EXPECT_EQ(c->sample_rate(), 24000);
  const auto codes = random_codes(6, c->n_quantizers(), c->hparams().codebook_size, 1);
  auto pcm = c->decode(codes);
  ASSERT_TRUE(pcm.ok()) << pcm.status().to_string();
  ASSERT_EQ(pcm->size(), 6u * 1920);
  int64_t inside = 0;
  double energy = 0;
  for (float v : *pcm) {
    ASSERT_TRUE(std::isfinite(v));
    ASSERT_LE(std::fabs(v), 1.0f);
    inside += std::fabs(v) < 0.999f;
    energy += double(v) * v;
  }
  // Random weights, but scaled so the signal is neither silent nor clipped throughout.
  EXPECT_GT(inside, static_cast<int64_t>(pcm->size() / 2));
  EXPECT_GT(energy / pcm->size(), 1e-6);
  auto again = c->decode(codes);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(same_bits(pcm->data(), again->data(), pcm->size())) << "not deterministic";
}

// Streams split the utterance differently; each must equal the whole decode bit for bit,
// on the reference kernels and on the ones this CPU selects. 40 frames with a window of 4
// and 32-frame KV pages: the window slides and pages are freed on the way.
TEST_F(Qwen3TtsCodecTest, StreamEqualsWholeUtteranceBitForBit) {
  auto c = load(*dir_);
  ASSERT_TRUE(c);
  const int64_t nq = c->n_quantizers(), n = 40;
  const auto codes = random_codes(n, nq, c->hparams().codebook_size, 2);
  for (const KernelTable* k : {&reference_kernels(), &select_kernels()}) {
    c->use_kernels(*k);
    auto whole = c->decode(codes, n);  // one chunk
    ASSERT_TRUE(whole.ok()) << whole.status().to_string();
    for (const std::vector<int64_t>& split :
         {std::vector<int64_t>{1}, {3}, {7, 1, 2, 13, 5}, {39, 1}}) {
      Qwen3TtsCodecStream s(*c);
      std::vector<float> pcm;
      int64_t at = 0;
      for (size_t i = 0; at < n; ++i) {
        const int64_t m = std::min(split[i % split.size()], n - at);
        auto part = s.decode_frames(codes.data() + at * nq, m);
        ASSERT_TRUE(part.ok()) << part.status().to_string();
        ASSERT_EQ(part->size(), static_cast<size_t>(m * 1920)) << "a frame's samples are final";
        pcm.insert(pcm.end(), part->begin(), part->end());
        at += m;
      }
      EXPECT_EQ(s.frames_decoded(), n);
      ASSERT_EQ(pcm.size(), whole->size());
      size_t first = 0;
      while (first < pcm.size() && pcm[first] == (*whole)[first]) ++first;
      EXPECT_TRUE(same_bits(pcm.data(), whole->data(), pcm.size()))
          << k->name << ": first difference at sample " << first << " (frame " << first / 1920
          << ")"
          << ": stream split starting " << split[0] << " differs from the whole decode";
    }
    auto chunked = c->decode(codes);  // the default chunks
    ASSERT_TRUE(chunked.ok());
    EXPECT_TRUE(same_bits(chunked->data(), whole->data(), whole->size()));
  }
}

// Causal: changing codebook q of frame j leaves every sample before j * 1920 unchanged and
// changes samples after it (every codebook reaches the output).
TEST_F(Qwen3TtsCodecTest, AFrameChangesNoEarlierSampleAndEveryCodebookMatters) {
  auto c = load(*dir_);
  ASSERT_TRUE(c);
  const int64_t nq = c->n_quantizers(), n = 8, j = 5;
  const auto codes = random_codes(n, nq, c->hparams().codebook_size, 3);
  auto base = c->decode(codes);
  ASSERT_TRUE(base.ok());
  for (int64_t q : {int64_t{0}, int64_t{1}, nq - 1}) {
    auto changed = codes;
    int32_t& code = changed[j * nq + q];
    code = (code + 1) % static_cast<int32_t>(c->hparams().codebook_size);
    auto pcm = c->decode(changed);
    ASSERT_TRUE(pcm.ok());
    EXPECT_TRUE(same_bits(pcm->data(), base->data(), j * 1920)) << "codebook " << q;
    EXPECT_FALSE(same_bits(pcm->data() + j * 1920, base->data() + j * 1920, 1920))
        << "codebook " << q << " did not change its own frame";
  }
}

TEST_F(Qwen3TtsCodecTest, LoadsFromAModelDirectorysSpeechTokenizer) {
  const std::string model = testing::temp_dir("q3codec_model");
  std::filesystem::copy(*dir_, model + "/speech_tokenizer");
  auto c = load(model);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->hparams().latent_dim, small_qwen3_tts_codec_hparams().latent_dim);
}

TEST_F(Qwen3TtsCodecTest, OutOfRangeCodeNamesFrameAndCodebook) {
  auto c = load(*dir_);
  ASSERT_TRUE(c);
  auto codes = random_codes(3, c->n_quantizers(), c->hparams().codebook_size, 4);
  codes[2 * c->n_quantizers() + 7] = static_cast<int32_t>(c->hparams().codebook_size);
  auto pcm = c->decode(codes);
  ASSERT_FALSE(pcm.ok());
  EXPECT_NE(pcm.status().message().find("frame 2 codebook 7"), std::string::npos)
      << pcm.status().to_string();
  codes.pop_back();
  EXPECT_FALSE(c->decode(codes).ok()) << "a partial frame is refused";
}

TEST(Qwen3TtsCodecLoad, F16WeightsDecodeCloseToF32) {
  RandomQwen3TtsCodecOptions o;
  o.hp = small_qwen3_tts_codec_hparams();
  auto f32 = load(write_codec("f32", o));
  o.dtype = DType::F16;
  auto f16 = load(write_codec("f16", o));
  ASSERT_TRUE(f32 && f16);
  const auto codes = random_codes(4, 16, o.hp.codebook_size, 5);
  auto a = f32->decode(codes), b = f16->decode(codes);
  ASSERT_TRUE(a.ok() && b.ok());
  double d = 0;
  for (size_t i = 0; i < a->size(); ++i) d = std::max(d, double(std::fabs((*a)[i] - (*b)[i])));
  EXPECT_GT(d, 0.0) << "F16 file decoded as F32?";
  EXPECT_LT(d, 0.05);
}

// Rewrites config.json of a copy of `dir` through `edit`.
std::string edit_config(const std::string& dir, const std::string& name,
                        const std::function<void(nlohmann::json&)>& edit) {
  const std::string out = testing::temp_dir("q3codec_cfg_" + name);
  for (const char* f : {"/config.json", "/model.safetensors"})
    std::filesystem::copy_file(dir + f, out + f, std::filesystem::copy_options::overwrite_existing);
  auto j = read_json_file(out + "/config.json");
  EXPECT_TRUE(j.ok());
  edit(*j);
  std::ofstream(out + "/config.json") << j->dump(2);
  return out;
}

std::string load_error(const std::string& dir) {
  auto c = Qwen3TtsCodec::load(dir);
  return c.ok() ? "" : c.status().to_string();
}

TEST_F(Qwen3TtsCodecTest, ConfigErrorsNameTheKey) {
  EXPECT_NE(load_error(edit_config(*dir_, "type", [](auto& j) { j["model_type"] = "mimi"; }))
                .find("model_type 'mimi'"),
            std::string::npos);
  EXPECT_NE(
      load_error(edit_config(*dir_, "sem",
                             [](auto& j) { j["decoder_config"]["num_semantic_quantizers"] = 2; }))
          .find("num_semantic_quantizers"),
      std::string::npos);
  EXPECT_NE(load_error(edit_config(*dir_, "rate", [](auto& j) { j["decode_upsample_rate"] = 960; }))
                .find("decode_upsample_rate"),
            std::string::npos);
  // A layer more than the file has: the first missing tensor is named.
  const std::string e = load_error(
      edit_config(*dir_, "layers", [](auto& j) { j["decoder_config"]["num_hidden_layers"] = 3; }));
  EXPECT_NE(e.find("decoder.pre_transformer.layers.2."), std::string::npos) << e;
  // Wider codebooks than the file's: the mis-shaped tensor is named.
  const std::string s = load_error(
      edit_config(*dir_, "cbdim", [](auto& j) { j["decoder_config"]["codebook_dim"] = 64; }));
  EXPECT_NE(s.find("decoder.quantizer.rvq_first"), std::string::npos) << s;
}

}  // namespace
}  // namespace edge
