// libFuzzer target: the decoders a request's media parts reach, over arbitrary bytes. The
// first byte picks the decoder (PNG/JPEG through formats/image.cpp, else WAV through
// formats/wav.cpp); a decoded image is resized both ways and normalised as an encoder's
// preprocessing would. Pixel limits stay small so a huge declared size is refused, not
// allocated.
#include <cstddef>
#include <cstdint>
#include <span>

#include "formats/image.h"
#include "formats/wav.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t which = data[0];
  const std::span<const uint8_t> bytes(data + 1, size - 1);
  if (which & 1) {
    edge::ImageLimits limits;
    limits.max_pixels = 1 << 20;
    auto img = edge::decode_image(bytes, limits);
    if (!img.ok()) return 0;
    const float mean[3] = {0.5f, 0.5f, 0.5f}, stdev[3] = {0.5f, 0.5f, 0.5f};
    auto small = edge::resize_image(*img, 7, 5, edge::ResizeFilter::kBilinear);
    auto big = edge::resize_image(*img, 33, 17, edge::ResizeFilter::kBicubic);
    (void)edge::normalize_image(small, mean, stdev);
    (void)edge::normalize_image(big, mean, stdev);
  } else {
    auto pcm = edge::decode_wav_mono(bytes.data(), bytes.size());
    (void)pcm;
  }
  return 0;
}
