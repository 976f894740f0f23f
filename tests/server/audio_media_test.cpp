// input_audio parts through build_media_prompt with an ultravox projector: the clip's rows
// between its marker, a repeated clip reusing the encoded rows (the encoder runs once), and
// bad clips as 400s by class.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "convert/random_audio_projector.h"
#include "convert/random_model.h"
#include "formats/wav.h"
#include "model/model.h"
#include "server/media_request.h"

namespace edge::server {
namespace {

class AudioMedia : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ =
        std::filesystem::temp_directory_path() / ("edge_audio_media_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    RandomModelOptions lm;
    lm.arch = "qwen3";
    lm.n_embd = 64;
    ASSERT_TRUE(write_random_model(lm, (dir_ / "lm.gguf").string()).ok());
    RandomAudioProjectorOptions p;
    p.n_embd = 32;
    p.n_layer = 1;
    p.n_out = 64;
    ASSERT_TRUE(write_random_audio_projector(p, (dir_ / "mmproj.gguf").string()).ok());
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }

  void SetUp() override {
    auto m = Model::load((dir_ / "lm.gguf").string(), LoadOptions{});
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    lm_ = std::move(*m);
    auto e = load_media_encoders((dir_ / "mmproj.gguf").string(), 2, 64);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    enc_ = *e;
    enc_->max_audio_seconds = 2.0;
  }

  static MediaInput clip(double seconds, float freq) {
    std::vector<float> pcm(static_cast<size_t>(seconds * 16000));
    for (size_t i = 0; i < pcm.size(); ++i)
      pcm[i] = 0.3f * std::sin(freq * static_cast<float>(i) / 16000.0f);
    const std::vector<uint8_t> b =
        encode_wav16(pcm.data(), static_cast<int64_t>(pcm.size()), 16000);
    return {MediaInput::Kind::kAudio, std::string(b.begin(), b.end()), "wav",
            "messages[0].content[1].input_audio.data"};
  }

  std::optional<ApiError> build(const MediaInput& m, std::vector<int32_t>& ids,
                                std::vector<MediaEmbedding>& spans) {
    return build_media_prompt(enc_.get(), *lm_->tokenizer(),
                              std::string("hi ") + kMediaMarker + " what?", {m}, ids, spans);
  }

  static std::filesystem::path dir_;
  std::unique_ptr<Model> lm_;
  std::shared_ptr<MediaEncoders> enc_;
};
std::filesystem::path AudioMedia::dir_;

TEST_F(AudioMedia, RowsBetweenTheMarkerAndARepeatIsNotReEncoded) {
  ASSERT_TRUE(enc_->audio);
  EXPECT_FALSE(enc_->vision);
  std::vector<int32_t> ids, ids2, ids3;
  std::vector<MediaEmbedding> spans, spans2, spans3;
  const MediaInput a = clip(1.0, 2765.0f);
  ASSERT_FALSE(build(a, ids, spans).has_value());
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].n_tokens, 375);  // 30 s chunk -> 1500 positions -> stacks of 4
  EXPECT_FALSE(spans[0].bidirectional);
  EXPECT_EQ(spans[0].rows->size(), 375u * 64u);
  // "[BEGIN_AUDIO]" precedes the rows.
  const std::vector<int32_t> begin = lm_->tokenizer()->encode("[BEGIN_AUDIO]", false, true);
  ASSERT_GE(spans[0].position, static_cast<int64_t>(begin.size()));
  EXPECT_TRUE(
      std::equal(begin.begin(), begin.end(), ids.begin() + spans[0].position - begin.size()));
  EXPECT_EQ(enc_->encoder_runs, 1u);
  ASSERT_FALSE(build(a, ids2, spans2).has_value());
  EXPECT_EQ(enc_->encoder_runs, 1u);  // the same clip: rows reused
  EXPECT_EQ(spans2[0].rows, spans[0].rows);
  EXPECT_EQ(spans2[0].hash, spans[0].hash);
  EXPECT_EQ(ids2, ids);
  ASSERT_FALSE(build(clip(1.0, 3000.0f), ids3, spans3).has_value());
  EXPECT_EQ(enc_->encoder_runs, 2u);
  EXPECT_NE(spans3[0].hash, spans[0].hash);
}

TEST_F(AudioMedia, BadClipsAre400sByClass) {
  std::vector<int32_t> ids;
  std::vector<MediaEmbedding> spans;
  MediaInput bad = clip(0.5, 2000.0f);
  struct Case {
    std::string bytes;
    const char* code;
  };
  std::string eight_bit = bad.bytes;
  eight_bit[34] = 8;  // bits per sample
  const std::vector<Case> cases = {
      {"OggS not a wav", "invalid_audio"},
      {bad.bytes.substr(0, 100), "invalid_audio"},
      {eight_bit, "unsupported_audio_format"},
      {clip(3.0, 2000.0f).bytes, "audio_too_long"},
  };
  for (const Case& c : cases) {
    bad.bytes = c.bytes;
    auto err = build(bad, ids, spans);
    ASSERT_TRUE(err.has_value()) << c.code;
    EXPECT_EQ(err->code, c.code) << err->message;
    EXPECT_EQ(err->param, "messages[0].content[1].input_audio.data");
  }
  EXPECT_EQ(enc_->encoder_runs, 0u);
}

}  // namespace
}  // namespace edge::server
