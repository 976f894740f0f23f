// MXFP4 blocks (mxfp4.h): GGML's rules, restated in our code.
#include "quant/mxfp4.h"

#include <cmath>
#include <string>

namespace edge {

float mxfp4_scale(uint8_t e) {
  return std::ldexp(1.0f, static_cast<int>(e) - 128);
}

uint8_t mxfp4_exponent(float amax) {
  // GGML computes this in float (floorf(log2f(amax)) - 2 + 127): the same calls, so a value
  // just below a power of two that log2f rounds up to it gets the same exponent as theirs.
  const float e = std::floor(std::log2(amax)) - 2.0f + 127.0f;
  return e <= 0.0f ? 0 : static_cast<uint8_t>(e);
}

void mxfp4_encode_block(const float* x, uint8_t* e, uint8_t* code) {
  float amax = 0.0f;
  for (int j = 0; j < kMxfp4Block; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  *e = 0;
  for (int j = 0; j < kMxfp4Block; ++j) code[j] = 0;
  if (amax == 0.0f) return;
  *e = mxfp4_exponent(amax);
  const float d = mxfp4_scale(*e);
  for (int j = 0; j < kMxfp4Block; ++j) {
    // Nearest value, the lowest code on a tie: d * doubled is exact (a power of two times a
    // small integer), so only the subtraction rounds, as in GGML's search.
    float best = std::fabs(x[j] - d * static_cast<float>(kMxfp4Doubled[0]));
    for (int c = 1; c < 16; ++c) {
      const float diff = std::fabs(x[j] - d * static_cast<float>(kMxfp4Doubled[c]));
      if (diff < best) {
        best = diff;
        code[j] = static_cast<uint8_t>(c);
      }
    }
  }
}

Status quantize_mxfp4_row(const float* x, int64_t n, uint8_t* out) {
  if (n < 0 || n % kMxfp4Block != 0)
    return Status::invalid_argument("mxfp4 row of " + std::to_string(n) +
                                    " elements is not a multiple of the block size 32");
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i]))
      return Status::invalid_argument("mxfp4: element " + std::to_string(i) + " is not finite");
  uint8_t code[kMxfp4Block];
  for (int64_t b = 0; b < n / kMxfp4Block; ++b) {
    uint8_t* blk = out + b * kMxfp4BlockBytes;
    mxfp4_encode_block(x + b * kMxfp4Block, &blk[0], code);
    for (int j = 0; j < 16; ++j) blk[1 + j] = static_cast<uint8_t>(code[j] | code[j + 16] << 4);
  }
  return {};
}

void dequantize_mxfp4_block(const uint8_t* block, float* y) {
  const float d = mxfp4_scale(block[0]);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(kMxfp4Doubled[block[1 + j] & 15]);
    y[j + 16] = d * static_cast<float>(kMxfp4Doubled[block[1 + j] >> 4]);
  }
}

}  // namespace edge
