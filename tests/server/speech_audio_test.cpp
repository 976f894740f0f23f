// Audio bytes of /v1/audio/speech: s16le, the WAV header, and the speed resampler.
#include "server/speech_audio.h"

#include <gtest/gtest.h>

#include <cmath>

#include "formats/wav.h"

namespace edge::server {
namespace {

TEST(SpeechAudio, WavHeaderAndPcmMakeAValidFile) {
  const std::vector<float> pcm = {0.f, 0.5f, -0.5f, 1.f, -1.f, 2.f /* clipped */};
  const std::string bytes = pcm_s16le(pcm);
  ASSERT_EQ(bytes.size(), 12u);
  const std::string file = wav_header(24000, static_cast<int64_t>(bytes.size())) + bytes;
  ASSERT_EQ(file.size(), 44u + 12u);
  auto w = decode_wav16(reinterpret_cast<const uint8_t*>(file.data()), file.size());
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(w->sample_rate, 24000);
  EXPECT_EQ(w->channels, 1);
  EXPECT_EQ(w->samples, (std::vector<int16_t>{0, 16384, -16384, 32767, -32767, 32767}));
  // The same bytes as the file writer's.
  EXPECT_EQ(file, std::string(reinterpret_cast<const char*>(encode_wav16(pcm.data(), 6, 24000).data()), 56));
  // Streaming: unknown sizes.
  const std::string h = wav_header(24000, -1);
  EXPECT_EQ(h.substr(4, 4), std::string(4, '\xFF'));
  EXPECT_EQ(h.substr(40, 4), std::string(4, '\xFF'));
}

TEST(SpeechAudio, Base64AsRfc4648) {
  EXPECT_EQ(base64(""), "");
  EXPECT_EQ(base64("f"), "Zg==");
  EXPECT_EQ(base64("fo"), "Zm8=");
  EXPECT_EQ(base64("foo"), "Zm9v");
  EXPECT_EQ(base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64(std::string("\xFF\x00\xFE", 3)), "/wD+");
}

TEST(SpeechAudio, SpeedIsTheSameHoweverTheInputIsSplit) {
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.01f * static_cast<float>(i));
  for (double speed : {0.5, 1.0, 1.5, 4.0}) {
    SpeedChanger whole(speed), parts(speed);
    const std::vector<float> a = whole.push(x);
    std::vector<float> b;
    for (size_t i = 0; i < x.size(); i += 77) {
      const std::vector<float> part(x.begin() + i, x.begin() + std::min(x.size(), i + 77));
      const auto out = parts.push(part);
      b.insert(b.end(), out.begin(), out.end());
    }
    ASSERT_EQ(a.size(), b.size()) << speed;
    for (size_t i = 0; i < a.size(); ++i) ASSERT_FLOAT_EQ(a[i], b[i]);
    EXPECT_NEAR(static_cast<double>(a.size()), 1000.0 / speed, 2.0) << speed;
    // Sample k is the input at k * speed.
    if (speed != 1.0) {
      EXPECT_NEAR(a[10], std::sin(0.01 * 10 * speed), 1e-4);
    }
  }
}

}  // namespace
}  // namespace edge::server
