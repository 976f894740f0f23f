// The fixed 16 kHz test signal the audio references were made from (the same formula is in
// tests/data/whisper_mel/make_reference.py and tests/data/whisper_mtmd/mtmd_audio_ref.cpp):
// two tones plus an integer-hash noise, computed in double, rounded to float.
#pragma once

#include <cmath>
#include <cstddef>
#include <numbers>
#include <vector>

namespace edge::testing {

inline std::vector<float> two_tone_signal(size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i);
    const double noise = static_cast<double>((i * 7919) % 1000) / 1000.0 - 0.5;
    x[i] = static_cast<float>(0.5 * std::sin(2 * std::numbers::pi * 440.0 * t / 16000) +
                              0.25 * std::sin(2 * std::numbers::pi * 3000.0 * t / 16000 + 0.3) +
                              0.1 * noise);
  }
  return x;
}

}  // namespace edge::testing
