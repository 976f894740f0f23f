// MXFP4 (GGUF type 39, formats/tensor.h): the value table, the E8M0 scale and GGML's block
// quantiser, shared by the GGUF decoder, the repack, the packed quantiser and the scalar
// kernels. Facts of the format (written from GGML's block definition):
//   block  17 bytes = u8 e | u8 qs[16]; element j (0..15) = qs[j] & 15, element j + 16 =
//          qs[j] >> 4.
//   code   4-bit E2M1: bit 3 the sign, bits 0-2 index {0, 0.5, 1, 1.5, 2, 3, 4, 6}. GGML keeps
//          the values doubled as int8, kMxfp4Doubled below (-12..12, both zeros 0).
//   scale  E8M0 e is 2^(e - 127); with the doubled values a weight is 2^(e - 128) * doubled.
//          e = 0 and e = 1 give the subnormal floats 2^-128 and 2^-127; e = 255 (NaN in the
//          OCP spec) is read as 2^127, as GGML does.
//   GGML's quantiser (quantize_row_mxfp4_ref): amax = max |x| of the block; an all-zero block
//          is e = 0 with every code 0; else e = floor(log2(amax)) - 2 + 127 and each x takes
//          the code whose 2^(e - 128) * doubled value is nearest (the lowest code on a tie,
//          so 0 is code 0, never the negative zero 8). The largest magnitude is 1.5 times the
//          power of two below amax: amax in (1.5, 2) * 2^m clips to 1.5 * 2^m.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace edge {

constexpr int kMxfp4Block = 32;       // weights per block
constexpr int kMxfp4BlockBytes = 17;  // e + 16 code bytes

// E2M1 code -> its value doubled (an integer): the table the int8 kernels look codes up in.
constexpr int8_t kMxfp4Doubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e - 128): the factor of a doubled value (E8M0's 2^(e - 127), halved). Exact for every e.
float mxfp4_scale(uint8_t e);

// GGML's exponent for a block whose largest magnitude is amax > 0: floor(log2(amax)) + 125.
// Below 2^-125 GGML's conversion to u8 is undefined; we write 0 there (|w| <= 12 * 2^-128).
uint8_t mxfp4_exponent(float amax);

// One block of 32 floats as GGML's quantiser encodes it: *e and the codes in element order
// (code[j] for x[j], 0..15 each). x must be finite.
void mxfp4_encode_block(const float* x, uint8_t* e, uint8_t* code);

// n floats (n % 32 == 0) into n / 32 GGUF MXFP4 blocks (17 bytes each). Refuses a non-finite
// value or a bad n, naming it.
Status quantize_mxfp4_row(const float* x, int64_t n, uint8_t* out);

// One GGUF MXFP4 block into 32 floats, exactly as GGML dequantises it.
void dequantize_mxfp4_block(const uint8_t* block, float* y);

}  // namespace edge
