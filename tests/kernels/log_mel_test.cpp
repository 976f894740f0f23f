// Audio input preprocessing: resampling to 16 kHz (libsamplerate) and Whisper's log-mel
// spectrogram, the latter against numpy frames (tests/data/whisper_mel/, made by
// make_reference.py there with the command in its docstring).
#include "kernels/log_mel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <numbers>
#include <sstream>

#include "audio_test_signal.h"
#include "kernels/resample.h"

namespace edge {
namespace {

struct RefBlock {
  int n_mel = 0, frames = 0;
  std::vector<float> values;  // [frames][n_mel]
  float pad = 0.0f;
};

std::vector<RefBlock> read_reference() {
  std::ifstream f(std::string(EDGE_SOURCE_DIR) + "/tests/data/whisper_mel/reference.txt");
  std::vector<RefBlock> blocks;
  std::string word;
  while (f >> word) {
    RefBlock b;
    if (word != "n_mel") break;
    f >> b.n_mel >> word >> b.frames;
    b.values.resize(static_cast<size_t>(b.n_mel * b.frames));
    for (float& v : b.values) f >> v;
    f >> word >> b.pad;
    blocks.push_back(std::move(b));
  }
  return blocks;
}

TEST(LogMel, MatchesNumpyReference) {
  const std::vector<RefBlock> blocks = read_reference();
  ASSERT_EQ(blocks.size(), 2u) << "tests/data/whisper_mel/reference.txt unreadable";
  const std::vector<float> x = testing::two_tone_signal(4000);
  for (const RefBlock& b : blocks) {
    auto mel = whisper_log_mel(x.data(), static_cast<int64_t>(x.size()), b.n_mel);
    ASSERT_TRUE(mel.ok()) << mel.status().to_string();
    EXPECT_EQ(mel->n_frames, (4000 + 480000) / 160);
    // Float32 FFT vs numpy's float64 (measured 3e-5 .. 4e-5).
    float max_err = 0.0f;
    for (int f = 0; f < b.frames; ++f)
      for (int m = 0; m < b.n_mel; ++m)
        max_err = std::max(max_err, std::abs(mel->data[m * mel->n_frames + f] -
                                             b.values[static_cast<size_t>(f * b.n_mel + m)]));
    std::printf("log-mel n_mel %d vs numpy: max |diff| %.3g over %d frames\n", b.n_mel, max_err,
                b.frames);
    EXPECT_LT(max_err, 2e-4f) << "n_mel " << b.n_mel;
    EXPECT_NEAR(mel->data.back(), b.pad, 1e-5f);
    EXPECT_NEAR(mel->data[5 * mel->n_frames + 100], b.pad, 1e-5f);
  }
}

TEST(LogMel, FilterbankIsSlaneyNormalised) {
  // Area normalisation: each triangle's weights times the bin spacing (40 Hz) integrate
  // to ~1 (2 / bandwidth * bandwidth / 2), up to the sampling of the triangle.
  const std::vector<float> w = slaney_mel_filterbank(80, 400, 16000);
  ASSERT_EQ(w.size(), 80u * 201u);
  for (int m = 10; m < 80; m += 10) {
    double area = 0.0;
    for (int k = 0; k < 201; ++k) area += w[m * 201 + k] * 40.0;
    EXPECT_NEAR(area, 1.0, 0.15) << "filter " << m;
  }
}

TEST(LogMel, ChunksOf30Seconds) {
  // <= 30 s: one chunk; 30 s + 1 sample: two (the second mostly padding).
  std::vector<float> x(30 * 16000, 0.01f);
  auto one = whisper_mel_chunks(x.data(), 16000, 80);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].n_frames, 3000);
  x.push_back(0.01f);
  auto two = whisper_mel_chunks(x.data(), static_cast<int64_t>(x.size()), 80);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->size(), 2u);
  EXPECT_FALSE(whisper_log_mel(x.data(), 10, 0).ok());
  EXPECT_FALSE(whisper_log_mel(x.data(), 10, 300).ok());
}

TEST(Resample, LengthAndToneSurvive) {
  // A 440 Hz tone at 44.1 kHz -> 16 kHz keeps its frequency and amplitude.
  const int n = 44100 / 2;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = 0.5f * std::sin(2 * std::numbers::pi * 440.0 * i / 44100);
  auto y = resample_mono(x.data(), n, 44100, 16000);
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  ASSERT_EQ(y->size(), 8000u);
  float max_err = 0.0f;
  for (int i = 1000; i < 7000; ++i)  // away from the filter's edges
    max_err = std::max(max_err,
                       std::abs((*y)[i] - 0.5f * static_cast<float>(std::sin(2 * std::numbers::pi *
                                                                             440.0 * i / 16000))));
  EXPECT_LT(max_err, 5e-3f);
  auto same = resample_mono(x.data(), 100, 16000, 16000);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, std::vector<float>(x.begin(), x.begin() + 100));
  EXPECT_FALSE(resample_mono(x.data(), 100, 10, 16000).ok());
  EXPECT_FALSE(resample_mono(x.data(), 100, 16000, 0).ok());
}

}  // namespace
}  // namespace edge
