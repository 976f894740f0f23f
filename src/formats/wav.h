// RIFF/WAVE PCM, 16-bit little-endian, mono or interleaved channels: the format the
// vocoder's output is written in (`edge-infer vocode`, later /v1/audio/speech).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace edge {

// Float samples (nominally [-1, 1]; clipped) -> a complete WAV file image. Samples are
// rounded to the nearest int16 after scaling by 32767.
std::vector<uint8_t> encode_wav16(const float* pcm, int64_t n_samples, int32_t sample_rate,
                                  int32_t channels = 1);
Status write_wav16(const std::string& path, const std::vector<float>& pcm, int32_t sample_rate);

struct WavInfo {
  int32_t sample_rate = 0;
  int32_t channels = 0;
  int32_t bits = 0;
  std::vector<int16_t> samples;  // interleaved
};
// Reads a 16-bit PCM WAV image (for tests and checks): invalid_format on anything else.
Expected<WavInfo> decode_wav16(const uint8_t* data, uint64_t size);

}  // namespace edge
