// Audio bytes for /v1/audio/speech: 16-bit little-endian PCM, a WAV header for a stream
// whose length is not known yet (sizes 0xFFFFFFFF, as streaming WAV servers send), base64
// for server-sent events (core/base64.h), and the `speed` option as a streaming linear resampler (faster
// speech is shorter and higher).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base64.h"  // base64(): audio in JSON events

namespace edge::server {

// Samples in [-1, 1] (clipped) as s16le bytes.
std::string pcm_s16le(const std::vector<float>& samples);
// A 44-byte WAV header (PCM 16-bit, mono); data_bytes < 0: unknown (streaming).
std::string wav_header(int32_t sample_rate, int64_t data_bytes);

// Plays the input `speed` times faster: output sample k is the input at k * speed, linearly
// interpolated, across chunk boundaries (the same output however the input is split).
class SpeedChanger {
 public:
  explicit SpeedChanger(double speed) : speed_(speed) {}
  std::vector<float> push(const std::vector<float>& in);

 private:
  double speed_;
  std::vector<float> buf_;  // input not yet passed
  double t_ = 0;            // next output position in buf_
};

}  // namespace edge::server
