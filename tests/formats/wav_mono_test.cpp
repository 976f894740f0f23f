// decode_wav_mono: the WAV reader behind audio input (chat input_audio, generate --audio).
#include <gtest/gtest.h>

#include <cstring>

#include "formats/wav.h"

namespace edge {
namespace {

void put(std::vector<uint8_t>& b, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// A WAV image with an arbitrary fmt chunk (tag, channels, bits) and raw data bytes.
std::vector<uint8_t> wav_image(uint16_t tag, int channels, int rate, int bits,
                               const std::vector<uint8_t>& data, bool extensible = false) {
  std::vector<uint8_t> b = {'R', 'I', 'F', 'F'};
  const uint32_t fmt_len = extensible ? 40 : 16;
  put(b, 4 + 8 + fmt_len + 8 + static_cast<uint32_t>(data.size()), 4);
  for (char c : std::string("WAVEfmt ")) b.push_back(static_cast<uint8_t>(c));
  put(b, fmt_len, 4);
  put(b, extensible ? 0xFFFE : tag, 2);
  put(b, channels, 2);
  put(b, rate, 4);
  put(b, rate * channels * bits / 8, 4);
  put(b, channels * bits / 8, 2);
  put(b, bits, 2);
  if (extensible) {
    put(b, 22, 2);    // cbSize
    put(b, bits, 2);  // valid bits
    put(b, 0, 4);     // channel mask
    put(b, tag, 2);   // sub-format GUID: tag, then the fixed tail (not checked)
    for (int i = 0; i < 14; ++i) b.push_back(0);
  }
  for (char c : std::string("data")) b.push_back(static_cast<uint8_t>(c));
  put(b, static_cast<uint32_t>(data.size()), 4);
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

std::vector<uint8_t> float_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> d(v.size() * 4);
  std::memcpy(d.data(), v.data(), d.size());
  return d;
}

TEST(WavMono, Pcm16MonoScaledBy32768) {
  const std::vector<float> pcm = {0.0f, 0.5f, -0.5f, 1.0f, -1.0f};
  const std::vector<uint8_t> b = encode_wav16(pcm.data(), 5, 22050);
  auto m = decode_wav_mono(b.data(), b.size());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->sample_rate, 22050);
  ASSERT_EQ(m->samples.size(), 5u);
  EXPECT_FLOAT_EQ(m->samples[1], 16384.0f / 32768.0f);
  EXPECT_FLOAT_EQ(m->samples[3], 32767.0f / 32768.0f);
  EXPECT_FLOAT_EQ(m->samples[4], -32767.0f / 32768.0f);
}

TEST(WavMono, StereoIsAveraged) {
  // Frames (L, R): (0.5, -0.5) -> 0, (0.25, 0.75) -> 0.5.
  const std::vector<float> pcm = {0.5f, -0.5f, 0.25f, 0.75f};
  const std::vector<uint8_t> b = encode_wav16(pcm.data(), 4, 16000, 2);
  auto m = decode_wav_mono(b.data(), b.size());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  ASSERT_EQ(m->samples.size(), 2u);
  EXPECT_NEAR(m->samples[0], 0.0f, 1e-4f);
  EXPECT_NEAR(m->samples[1], 0.5f, 1e-4f);
}

TEST(WavMono, Float32PlainAndExtensible) {
  const std::vector<float> v = {0.125f, -0.75f, 0.5f, 0.25f};
  for (bool ext : {false, true}) {
    const auto b = wav_image(3, 2, 48000, 32, float_bytes(v), ext);
    auto m = decode_wav_mono(b.data(), b.size());
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(m->sample_rate, 48000);
    ASSERT_EQ(m->samples.size(), 2u);
    EXPECT_FLOAT_EQ(m->samples[0], (0.125f - 0.75f) / 2);
    EXPECT_FLOAT_EQ(m->samples[1], 0.375f);
  }
}

// Each refusal names its cause, so the API can return it to the client.
TEST(WavMono, BadImagesNameTheProblem) {
  struct Case {
    std::vector<uint8_t> bytes;
    const char* needle;
  };
  const std::vector<float> pcm(8, 0.1f);
  std::vector<uint8_t> good = encode_wav16(pcm.data(), 8, 16000);
  std::vector<uint8_t> truncated(good.begin(), good.end() - 6);
  std::vector<uint8_t> no_data(good.begin(), good.begin() + 36);
  std::vector<Case> cases = {
      {{'O', 'g', 'g', 'S', 0, 0, 0, 0, 0, 0, 0, 0}, "not a WAV file"},
      {truncated, "truncated"},
      {no_data, "no data chunk"},
      {wav_image(1, 1, 16000, 8, std::vector<uint8_t>(8, 128)), "8-bit integer PCM"},
      {wav_image(1, 1, 16000, 24, std::vector<uint8_t>(9, 0)), "24-bit integer PCM"},
      {wav_image(6, 1, 8000, 8, std::vector<uint8_t>(8, 0)), "sample format tag 6"},
      {wav_image(3, 1, 16000, 64, std::vector<uint8_t>(16, 0)), "64-bit float"},
      {wav_image(1, 0, 16000, 16, std::vector<uint8_t>(4, 0)), "0 channels"},
      {wav_image(1, 1, 100, 16, std::vector<uint8_t>(4, 0)), "sample rate 100"},
      {wav_image(1, 1, 16000, 16, {}), "no samples"},
  };
  for (const Case& c : cases) {
    auto m = decode_wav_mono(c.bytes.data(), c.bytes.size());
    ASSERT_FALSE(m.ok()) << c.needle;
    EXPECT_NE(m.status().message().find(c.needle), std::string::npos)
        << m.status().message() << " (expected '" << c.needle << "')";
  }
}

}  // namespace
}  // namespace edge
