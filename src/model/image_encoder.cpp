#include "model/image_encoder.h"

namespace edge {

uint64_t media_hash(std::span<const uint8_t> bytes, uint64_t salt) {
  uint64_t h = 0xcbf29ce484222325ull ^ salt;
  for (uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

Expected<std::vector<float>> preprocess_image(const ClipVisionHparams& h,
                                              std::span<const uint8_t> bytes,
                                              const ImageLimits& limits) {
  ASSIGN_OR_RETURN(RgbImage img, decode_image(bytes, limits));
  return clip_vision_pixels(h, img);
}

Expected<EncodedMedia> encode_image(const ClipVisionExec& ex, const VisionEncoderModel& m,
                                    std::span<const uint8_t> bytes, const ImageLimits& limits,
                                    uint64_t salt) {
  ASSIGN_OR_RETURN(std::vector<float> pixels, preprocess_image(m.hparams, bytes, limits));
  EncodedMedia out;
  out.rows = clip_vision_forward(ex, m.hparams, m.weights, pixels.data());
  out.n_tokens = m.hparams.n_tokens();
  out.hash = media_hash(bytes, salt);
  return out;
}

}  // namespace edge
