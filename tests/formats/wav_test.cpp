#include "formats/wav.h"

#include <gtest/gtest.h>

namespace edge {
namespace {

TEST(Wav, HeaderAndSamplesRoundTrip) {
  const std::vector<float> pcm = {0.0f, 0.5f, -0.5f, 1.0f, -1.0f, 2.0f, -3.0f};
  const std::vector<uint8_t> b = encode_wav16(pcm.data(), 7, 24000);
  ASSERT_EQ(b.size(), 44u + 14u);
  EXPECT_EQ(std::string(b.begin(), b.begin() + 4), "RIFF");
  EXPECT_EQ(std::string(b.begin() + 36, b.begin() + 40), "data");
  auto w = decode_wav16(b.data(), b.size());
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(w->sample_rate, 24000);
  EXPECT_EQ(w->channels, 1);
  EXPECT_EQ(w->bits, 16);
  // Scaled by 32767, rounded, clipped to [-1, 1].
  EXPECT_EQ(w->samples, (std::vector<int16_t>{0, 16384, -16384, 32767, -32767, 32767, -32767}));
}

TEST(Wav, RefusesTruncatedOrForeignImages) {
  const std::vector<float> pcm(10, 0.25f);
  std::vector<uint8_t> b = encode_wav16(pcm.data(), 10, 16000);
  EXPECT_FALSE(decode_wav16(b.data(), 30).ok());  // data chunk cut off
  b[0] = 'X';
  EXPECT_FALSE(decode_wav16(b.data(), b.size()).ok());
}

}  // namespace
}  // namespace edge
