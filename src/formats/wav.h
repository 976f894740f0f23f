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

// Audio input (speech to the model): a WAV image as mono float samples. Accepts 16-bit
// integer PCM (scaled by 1/32768) and 32-bit IEEE float, plain or inside
// WAVE_FORMAT_EXTENSIBLE, any channel count (channels averaged). Everything else is an
// invalid_format (not RIFF/WAVE, truncated chunks, no data) or unsupported (other sample
// formats, e.g. 8/24-bit or A-law) naming what was found.
struct PcmMono {
  int32_t sample_rate = 0;
  std::vector<float> samples;  // [n_frames]
};
Expected<PcmMono> decode_wav_mono(const uint8_t* data, uint64_t size);

}  // namespace edge
