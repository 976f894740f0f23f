// Image bytes -> LM input rows through a vision projector file: decode (PNG/JPEG), resize
// to the encoder's square input with its projector's filter, normalise with the file's
// mean/std, run the ViT and projector. The content hash keys the prefix cache
// (edge/engine.h MediaEmbedding): same bytes through the same projector, same hash.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "formats/image.h"
#include "model/arch/clip_vision.h"

namespace edge {

struct EncodedMedia {
  std::vector<float> rows;  // [n_tokens, n_out]
  int64_t n_tokens = 0;
  uint64_t hash = 0;
};

// 64-bit FNV-1a of the bytes, seeded with `salt` (the projector's identity).
uint64_t media_hash(std::span<const uint8_t> bytes, uint64_t salt);

// The pixels the encoder reads: [3][S][S].
Expected<std::vector<float>> preprocess_image(const ClipVisionHparams& h,
                                              std::span<const uint8_t> bytes,
                                              const ImageLimits& limits);

Expected<EncodedMedia> encode_image(const ClipVisionExec& ex, const VisionEncoderModel& m,
                                    std::span<const uint8_t> bytes, const ImageLimits& limits,
                                    uint64_t salt);

}  // namespace edge
