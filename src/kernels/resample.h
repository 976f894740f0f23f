// Sample-rate conversion for audio input (encoders want 16 kHz): libsamplerate's
// band-limited sinc converter (BSD-2-Clause; Debian libsamplerate0-dev).
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"

namespace edge {

// Mono float samples at `from_hz` -> `to_hz`. The same rate returns a copy. The output has
// round(n * to_hz / from_hz) samples (libsamplerate's length, trimmed or zero-padded by at
// most a sample so the length is exact). invalid_argument for rates outside [1000, 768000].
Expected<std::vector<float>> resample_mono(const float* x, int64_t n, int32_t from_hz,
                                           int32_t to_hz);

}  // namespace edge
