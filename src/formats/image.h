// Images in: PNG (libpng) and JPEG (libjpeg-turbo) decoding of untrusted bytes into RGB8,
// resampling and mean/std normalisation into the [3][H][W] floats a vision encoder reads.
//
// Both decoders are Debian's maintained, fuzzed libraries (stb_image states it is not
// meant for untrusted input); their error paths become a Status, and a JPEG warning
// (premature end of data, corrupt entropy data) is an error too, so a truncated file is
// refused rather than decoded half grey. The size is checked from the header before any
// pixel buffer is allocated.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace edge {

struct RgbImage {
  int64_t width = 0, height = 0;
  std::vector<uint8_t> rgb;  // [height][width][3]
};

struct ImageLimits {
  int64_t max_pixels = int64_t{4096} * 4096;
};

// "png" | "jpeg" | "" (unknown) from the first bytes.
std::string sniff_image_format(std::span<const uint8_t> bytes);

// Errors: unsupported (not PNG/JPEG), invalid_format (truncated or corrupt, with the
// decoder's message), out_of_range (more pixels than limits.max_pixels, or a 0 side).
// Alpha is dropped by compositing onto black (libpng's simplified API); grey and palette
// images are expanded to RGB.
Expected<RgbImage> decode_image(std::span<const uint8_t> bytes, const ImageLimits& limits = {});

enum class ResizeFilter : uint8_t { kBilinear, kBicubic };

// Separable resampling to w x h: output pixel i of a side samples the input around
// (i + 0.5) * in / out with the filter (triangle, or Keys cubic a = -0.5), its support
// widened by in / out when shrinking (antialiased, as Pillow resamples), weights
// normalised per output pixel; rows first, then columns, in float; rounded to 8 bits
// at the end.
RgbImage resize_image(const RgbImage& in, int64_t w, int64_t h, ResizeFilter filter);

// Aspect-preserving fit into w x h, as llama.cpp's mtmd pads (its img_tool::resize): scale =
// min(w / in.width, h / in.height) in float, each scaled side rounded up and capped at w or h,
// resized with the filter and pasted at ((w - sw) / 2, (h - sh) / 2) on a canvas of `pad`.
// (In float as mtmd, so that a side whose product lands just above an integer rounds up the same.)
// An image already w x h is returned as it is.
RgbImage letterbox_image(const RgbImage& in, int64_t w, int64_t h, ResizeFilter filter,
                         const std::array<uint8_t, 3>& pad);

// [3][H][W] floats: (v / 255 - mean[c]) / std[c].
std::vector<float> normalize_image(const RgbImage& img, const float mean[3], const float std[3]);

}  // namespace edge
